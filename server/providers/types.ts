/**
 * The sandbox provider plugin interface (docs/rules.md §4). Deliberately scoped: there is no
 * provider-wide list and no delete-by-query — only create by exact name, get by exact
 * name, list by this instance's labels, destroy one id, and read one file.
 */

/** Daytona's sandbox states (DAYTONA.md); a provider may report others, kept verbatim. */
export const SANDBOX_STATES = [
  "creating",
  "restoring",
  "destroyed",
  "destroying",
  "started",
  "stopped",
  "starting",
  "stopping",
  "error",
  "build_failed",
  "pending_build",
  "building_snapshot",
  "unknown",
  "pulling_snapshot",
  "archived",
  "archiving",
  "resizing",
  "snapshotting",
  "forking",
  "pausing",
  "paused",
  "resuming",
] as const;
export type SandboxState = (typeof SANDBOX_STATES)[number];

/** One sandbox as Runwarden sees it. */
export interface SandboxView {
  id: string;
  name: string;
  labels: Record<string, string>;
  /** Provider state, verbatim (usually one of SANDBOX_STATES). */
  state: string;
  desiredState: string | null;
  errorReason: string | null;
  /** ISO-8601. */
  createdAt: string;
  /** Whole seconds between createdAt and the `now` the view was computed for (never negative). */
  ageSeconds: number;
  cpu: number;
  /** GiB. */
  memory: number;
  /** GiB. */
  disk: number;
  /** USD per hour at the provider's rates (see cost.ts). */
  hourlyCost: number;
  /** Base of the toolbox proxy (file access, emulated runner); null when the provider did not say. */
  toolboxProxyUrl: string | null;
  /** The snapshot (image) it was made from, when the provider says. */
  snapshot?: string | null;
}

export interface CreateSandboxInput {
  /** The exact creation name (`creationName()`); the provider must keep it verbatim. */
  name: string;
  /** Must carry at least `runwarden.instance` (see labels.ts). */
  labels: Record<string, string>;
  cpu?: number;
  /** GiB. */
  memory?: number;
  /** GiB. */
  disk?: number;
  /** Minutes without activity before the provider stops the sandbox (Daytona: default 15, 0 = never). */
  autoStopInterval?: number;
  /** Minutes a stopped sandbox is kept before the provider deletes it (Daytona: default -1 = never, 0 = at stop). */
  autoDeleteInterval?: number;
  /** The snapshot (image) to make it from; the provider's default when absent. It needs `node` for the runner. */
  snapshot?: string;
  /** Aborting it abandons the request; the provider may still materialise the sandbox later. */
  signal?: AbortSignal;
}

export interface ViewOptions {
  /** The clock for `ageSeconds`; the provider's own clock when absent. */
  now?: Date;
  signal?: AbortSignal;
}

export type DestroyOutcome = "destroyed" | "already_gone";

export interface SandboxProvider {
  /** Which implementation this is, for logs and evidence. */
  readonly kind: "daytona";
  create(input: CreateSandboxInput, options?: ViewOptions): Promise<SandboxView>;
  /** The sandbox with exactly this name, or null when the provider says it does not exist. */
  getByName(name: string, options?: ViewOptions): Promise<SandboxView | null>;
  /** The sandbox with exactly this id, or null when the provider says it does not exist. */
  getById(id: string, options?: ViewOptions): Promise<SandboxView | null>;
  /**
   * Sandboxes carrying every one of these labels. Refuses an empty set and a set without
   * `runwarden.instance`: a list is always scoped to one instance.
   */
  listByLabels(labels: Record<string, string>, options?: ViewOptions): Promise<SandboxView[]>;
  /**
   * The same list one page at a time, as the provider pages it (same scope rules, same
   * checks on each answer): a caller of a large instance holds one page, not every sandbox.
   * A refused scope or a garbage answer throws from the iteration, after the pages before it.
   */
  listPagesByLabels(labels: Record<string, string>, options?: ViewOptions): AsyncGenerator<SandboxView[], void, undefined>;
  /** Destroys one sandbox by id; one that is already gone is a success. */
  destroy(id: string, options?: { signal?: AbortSignal }): Promise<{ outcome: DestroyOutcome }>;
  /**
   * Makes sure the sandbox is `started` (toolbox calls need it): a stopped one — auto-stop
   * while the controller was down — is started again and waited for. `restarted` says it
   * was; processes that ran in it (the runner) did not survive the stop.
   */
  ensureStarted(id: string, options?: ViewOptions): Promise<{ outcome: "already_started" | "restarted"; before: string; sandbox: SandboxView }>;
  /**
   * A file's text, or null when the sandbox or the file does not exist. A look, never the
   * sandbox's activity: it does not hold off the provider's auto-stop (docs/daytona.md).
   */
  readFile(sandboxId: string, path: string, options?: { signal?: AbortSignal }): Promise<string | null>;
}

export { ProviderError, type ProviderErrorKind } from "./errors";
export { LABEL_KEYS, buildLabels, instanceScope, normaliseLabels, creationName, type NormalisedLabels } from "./labels";
export { DEFAULT_RATES, hourlyCost, ageSeconds, type ResourceRates } from "./cost";
