import { ProviderError } from "./errors";

/**
 * Label keys every Runwarden sandbox carries. Ownership is decided from these alone:
 * nothing acts on a sandbox whose instance or company label is not its own (docs/rules.md §1).
 */
export const LABEL_KEYS = {
  instance: "runwarden.instance",
  company: "runwarden.company",
  operation: "runwarden.operation",
  run: "runwarden.run",
} as const;

/** The label triple the engine's `creation_intent` evidence compares (docs/evidence.md). */
export interface NormalisedLabels {
  instance: string | null;
  company: string | null;
  operation: string | null;
}

export function buildLabels(input: {
  instanceId: string;
  companyId: string;
  operationId?: string;
  runId?: string;
}): Record<string, string> {
  const labels: Record<string, string> = {
    [LABEL_KEYS.instance]: requireValue("instanceId", input.instanceId),
    [LABEL_KEYS.company]: requireValue("companyId", input.companyId),
  };
  if (input.operationId !== undefined) labels[LABEL_KEYS.operation] = requireValue("operationId", input.operationId);
  if (input.runId !== undefined) labels[LABEL_KEYS.run] = requireValue("runId", input.runId);
  return labels;
}

/** The labels that scope a list to one instance (and optionally one company). */
export function instanceScope(instanceId: string, companyId?: string): Record<string, string> {
  const labels: Record<string, string> = { [LABEL_KEYS.instance]: requireValue("instanceId", instanceId) };
  if (companyId !== undefined) labels[LABEL_KEYS.company] = requireValue("companyId", companyId);
  return labels;
}

export function normaliseLabels(labels: Record<string, string> | null | undefined): NormalisedLabels {
  return {
    instance: labels?.[LABEL_KEYS.instance] ?? null,
    company: labels?.[LABEL_KEYS.company] ?? null,
    operation: labels?.[LABEL_KEYS.operation] ?? null,
  };
}

/** Prefixes and operation ids are kept to characters every provider accepts in a name. */
const NAME_PART = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/;

/** The exact creation name `<prefix>-create-<operationId>` (docs/rules.md §1). */
export function creationName(prefix: string, operationId: string): string {
  if (!NAME_PART.test(prefix)) throw new ProviderError("refused", "creationName", `invalid prefix ${JSON.stringify(prefix)}`);
  if (!NAME_PART.test(operationId)) {
    throw new ProviderError("refused", "creationName", `invalid operation id ${JSON.stringify(operationId)}`);
  }
  return `${prefix}-create-${operationId}`;
}

/** True when `labels` carries every pair of `wanted`. */
export function hasLabels(labels: Record<string, string>, wanted: Record<string, string>): boolean {
  return Object.entries(wanted).every(([k, v]) => labels[k] === v);
}

function requireValue(field: string, value: string): string {
  if (typeof value !== "string" || value.trim() === "") {
    throw new ProviderError("refused", "buildLabels", `${field} must be a non-empty string`);
  }
  return value;
}
