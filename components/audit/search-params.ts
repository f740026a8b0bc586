import { createLoader, parseAsIsoDateTime, parseAsString, parseAsStringLiteral } from "nuqs/server";
import type { RouterInputs } from "@/trpc/types";

/**
 * The audit page's URL state, shared by the server prefetch, the client and the export
 * links. The filter names are the export's query parameters (server/audit/read.ts).
 */
export const AUDIT_OUTCOMES = ["ok", "refused", "error"] as const;

export const auditSearchParams = {
  actor: parseAsString,
  action: parseAsString,
  outcome: parseAsStringLiteral(AUDIT_OUTCOMES),
  targetType: parseAsString,
  targetId: parseAsString,
  from: parseAsIsoDateTime,
  to: parseAsIsoDateTime,
  /** The entry id the page starts below (older entries); none means the newest. */
  before: parseAsString,
};

export const loadAuditSearchParams = createLoader(auditSearchParams);
export type AuditValues = Awaited<ReturnType<typeof loadAuditSearchParams>>;
export const AUDIT_FILTERS = ["actor", "action", "outcome", "targetType", "targetId", "from", "to"] as const;

const text = (v: string | null) => v?.trim() || undefined;

export function toAuditFilter(v: Omit<AuditValues, "before">) {
  return {
    actor: text(v.actor),
    action: text(v.action),
    outcome: v.outcome ?? undefined,
    targetType: text(v.targetType),
    targetId: text(v.targetId),
    from: v.from ?? undefined,
    to: v.to ?? undefined,
  } satisfies RouterInputs["audit"]["list"];
}

export function toAuditListInput(v: AuditValues): RouterInputs["audit"]["list"] {
  return { ...toAuditFilter(v), cursor: text(v.before) };
}

/** Everything the filters match (not just the page shown), as a download. */
export function auditExportHref(format: "csv" | "json", v: Omit<AuditValues, "before">): string {
  const params = new URLSearchParams({ format });
  const f = toAuditFilter(v);
  for (const key of AUDIT_FILTERS) {
    const value = f[key];
    if (value !== undefined) params.set(key, value instanceof Date ? value.toISOString() : value);
  }
  return `/api/audit/export?${params.toString()}`;
}
