import { createLoader, createSerializer, parseAsInteger, parseAsIsoDateTime, parseAsString, parseAsStringLiteral } from "nuqs/server";
import type { RouterInputs } from "@/trpc/types";
import { STUCK_REASONS } from "@/server/shared/engine";

/**
 * The runs page's URL state, shared by the server page (prefetch) and the client table, so
 * both ask for exactly the same input and the prefetched page is the one shown.
 */

type ListInput = RouterInputs["runs"]["list"];

export const RUN_STATUSES = ["queued", "starting", "running", "suspended", "succeeded", "failed", "cancelled"] as const satisfies ReadonlyArray<NonNullable<ListInput["status"]>>;
export const OUTCOMES = ["retryable_failure", "terminal_failure"] as const satisfies ReadonlyArray<NonNullable<ListInput["outcome"]>>;
export const TARGETS = ["local", "remote"] as const satisfies ReadonlyArray<NonNullable<ListInput["target"]>>;
export const TIME_RANGES = ["1h", "24h", "7d", "30d"] as const satisfies ReadonlyArray<NonNullable<ListInput["range"]>>;
export const PAGE_SIZES = [10, 25, 50, 100] as const;
/** Stuck runs (docs/rules.md "Stuck runs"): any reason, or one. */
export const STUCK_FILTERS = ["any", ...STUCK_REASONS] as const satisfies ReadonlyArray<RouterInputs["runs"]["stuck"]["reason"]>;

export const runsSearchParams = {
  status: parseAsStringLiteral(RUN_STATUSES),
  outcome: parseAsStringLiteral(OUTCOMES),
  code: parseAsString,
  company: parseAsString,
  provider: parseAsString,
  target: parseAsStringLiteral(TARGETS),
  range: parseAsStringLiteral(TIME_RANGES),
  from: parseAsIsoDateTime,
  to: parseAsIsoDateTime,
  q: parseAsString,
  stuck: parseAsStringLiteral(STUCK_FILTERS),
  cursor: parseAsString,
  size: parseAsInteger.withDefault(25),
};

export const loadRunsSearchParams = createLoader(runsSearchParams);
export const serializeRunsSearch = createSerializer(runsSearchParams);

type Values = Awaited<ReturnType<typeof loadRunsSearchParams>>;

const opt = <T,>(v: T | null | undefined): T | undefined => v ?? undefined;

/** The filters (no cursor) as the procedures take them. */
export function toRunFilter(v: Omit<Values, "cursor" | "size">) {
  return {
    status: opt(v.status),
    outcome: opt(v.outcome),
    failureCode: opt(v.code?.trim() || null),
    companyId: opt(v.company?.trim() || null),
    provider: opt(v.provider?.trim() || null),
    target: opt(v.target),
    range: opt(v.range),
    createdFrom: opt(v.from),
    createdTo: opt(v.to),
    search: opt(v.q?.trim() || null),
  } satisfies RouterInputs["runs"]["failureGroups"];
}

export function toRunListInput(v: Values): ListInput {
  const size = PAGE_SIZES.includes(v.size as (typeof PAGE_SIZES)[number]) ? v.size : 25;
  return { ...toRunFilter(v), cursor: opt(v.cursor), pageSize: size };
}

/** The stuck-runs list's input: the same filters and page, and the reason (docs/rules.md "Stuck runs"). */
export function toStuckInput(v: Values): RouterInputs["runs"]["stuck"] {
  return { ...toRunListInput(v), reason: v.stuck ?? "any" };
}
