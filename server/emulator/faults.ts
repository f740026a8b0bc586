import { z } from "zod";
import { LABEL_KEYS } from "../providers/labels";
import { providerFailureSchema } from "../providers/runner";

/**
 * Fault injection rules for the emulator (`POST /admin/faults`). A rule matches calls by
 * sandbox name, run id and/or labels (all given criteria must hold; an empty match matches
 * every call) and applies one fault, `times` times (null: until removed).
 */

export const DEFAULT_REJECTION = {
  kind: "requires_action",
  category: "permission",
  message: "bwrap: loopback: Failed RTM_NEWADDR",
} as const;

export const faultSpecSchema = z.discriminatedUnion("kind", [
  /** Every matching call waits this long before it is handled. */
  z.object({ kind: z.literal("latency"), ms: z.number().int().min(0).max(600_000).default(500) }),
  /**
   * A create is held and its sandbox materialises `delayMs` after the request arrived,
   * even when the caller aborted meanwhile (GET answers 404 until then).
   */
  z.object({ kind: z.literal("late"), delayMs: z.number().int().min(0).max(3_600_000).default(3000) }),
  /** The runner stays `connecting`: session-open never answers; the caller must give up. */
  z.object({ kind: z.literal("never_connect") }),
  /** session-open fails definitely with this provider failure. */
  z.object({ kind: z.literal("reject"), providerFailure: providerFailureSchema.default({ ...DEFAULT_REJECTION }) }),
  /** Runner start fails with `runner_ingress_bind_conflict`. */
  z.object({ kind: z.literal("bind_conflict") }),
  /**
   * The provider unavailable, as Daytona is met (docs/daytona.md, "Errors and rate limits"): a 429 of a named throttler with its
   * headers (`Retry-After`, `X-RateLimit-*-<throttler>`, as @nestjs/throttler sends them), …
   */
  z.object({ kind: z.literal("rate_limit"), retryAfterSeconds: z.number().int().min(0).max(3600).default(2), throttler: z.string().min(1).default("sandbox-lifecycle") }),
  /** … a 5xx (a 502 is its proxy's HTML page, not JSON), … */
  z.object({ kind: z.literal("http_error"), status: z.union([z.literal(500), z.literal(502), z.literal(503), z.literal(504)]).default(502) }),
  /** … or no answer at all: the request is held until the client gives up (or the emulator closes). */
  z.object({ kind: z.literal("hang") }),
  /**
   * A create or start that takes `ms` to reach `started` — or ends in `error` with `errorReason`
   * (Daytona answers 400 "Sandbox failed to start" if that happens within its server-side wait,
   * while the sandbox exists and holds its name).
   */
  z.object({
    kind: z.literal("slow_start"),
    ms: z.number().int().min(0).max(600_000).default(40_000),
    outcome: z.enum(["started", "error"]).default("started"),
    errorReason: z.string().min(1).default("failed to pull the snapshot: context deadline exceeded"),
  }),
]);
export type FaultSpec = z.infer<typeof faultSpecSchema>;
export type FaultKind = FaultSpec["kind"];
export const FAULT_KINDS = ["latency", "late", "never_connect", "reject", "bind_conflict", "rate_limit", "http_error", "hang", "slow_start"] as const satisfies readonly FaultKind[];
/** Faults that make the provider unavailable: they apply at every point, like latency. */
export const UNAVAILABLE_KINDS = ["rate_limit", "http_error", "hang"] as const satisfies readonly FaultKind[];

export const faultMatchSchema = z
  .object({
    name: z.string().min(1).optional(),
    runId: z.string().min(1).optional(),
    labels: z.record(z.string(), z.string()).optional(),
    /** Only the sandbox API's calls, or only a sandbox's toolbox's (files, runner): one sandbox's toolbox failing while the API answers. */
    scope: z.enum(["api", "toolbox"]).optional(),
  })
  .strict();
export type FaultMatch = z.infer<typeof faultMatchSchema>;

/** The body of `POST /admin/faults`. `fault` may be a bare kind for its defaults. */
export const faultRuleInputSchema = z
  .object({
    match: faultMatchSchema.default({}),
    fault: z.union([z.enum(FAULT_KINDS).transform((kind) => faultSpecSchema.parse({ kind })), faultSpecSchema]),
    times: z.number().int().min(1).nullable().default(null),
  })
  .strict();
export type FaultRuleInput = z.input<typeof faultRuleInputSchema>;

export interface FaultRule {
  id: string;
  match: FaultMatch;
  fault: FaultSpec;
  /** How many calls it applies to; null: every call until removed. */
  times: number | null;
  used: number;
  createdAt: string;
}

/** What a call is about, for matching. */
export interface FaultSubject {
  name: string | null;
  labels: Record<string, string>;
  /** Run ids the call concerns: the `runwarden.run` label, the runner state's or the start request's. */
  runIds: string[];
}

/** Which faults each emulator operation honours (latency applies to all of them). */
export type FaultPoint = "create" | "start" | "sandbox" | "list" | "files" | "runner_start" | "session_open" | "runner";

export function faultAppliesAt(kind: FaultKind, point: FaultPoint): boolean {
  switch (kind) {
    case "latency":
    case "rate_limit":
    case "http_error":
    case "hang":
      return true;
    case "late":
      return point === "create";
    case "slow_start":
      return point === "create" || point === "start";
    case "never_connect":
    case "reject":
      return point === "session_open";
    case "bind_conflict":
      return point === "runner_start";
    default: {
      const never: never = kind;
      return never;
    }
  }
}

export function matchesSubject(match: FaultMatch, subject: FaultSubject): boolean {
  if (match.name !== undefined && match.name !== subject.name) return false;
  if (match.runId !== undefined && !subject.runIds.includes(match.runId)) return false;
  if (match.labels) {
    for (const [k, v] of Object.entries(match.labels)) if (subject.labels[k] !== v) return false;
  }
  return true;
}

/** Where a point's calls go: the sandbox API, or the sandbox's toolbox behind the proxy. */
export function pointScope(point: FaultPoint): "api" | "toolbox" {
  switch (point) {
    case "create":
    case "start":
    case "sandbox":
    case "list":
      return "api";
    case "files":
    case "runner_start":
    case "session_open":
    case "runner":
      return "toolbox";
    default: {
      const never: never = point;
      return never;
    }
  }
}

/** Rules of `kind` that apply to this call at this point, oldest first, with uses left. */
export function applicableRules(rules: readonly FaultRule[], point: FaultPoint, subject: FaultSubject, kind: FaultKind): FaultRule[] {
  return rules.filter(
    (r) =>
      r.fault.kind === kind &&
      faultAppliesAt(kind, point) &&
      (r.match.scope === undefined || r.match.scope === pointScope(point)) &&
      (r.times === null || r.used < r.times) &&
      matchesSubject(r.match, subject),
  );
}

export function subjectOf(name: string | null, labels: Record<string, string>, ...runIds: (string | null | undefined)[]): FaultSubject {
  const ids = [labels[LABEL_KEYS.run], ...runIds].filter((v): v is string => typeof v === "string" && v !== "");
  return { name, labels, runIds: [...new Set(ids)] };
}
