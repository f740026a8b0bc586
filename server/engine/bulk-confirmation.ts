/**
 * Bulk Retry and Cancel (docs/rules.md §2.11): whether a confirmation may carry out a previewed
 * plan. Pure: the plan as stored, what the confirmation carries, the confirming person's
 * companies and `now` come in; each run of the plan is then judged again on its own
 * (`admitRetry`, `admitCancel`) under its item's lock.
 */

export const BULK_PLAN_KINDS = ["retry", "cancel"] as const;
export type BulkPlanKind = (typeof BULK_PLAN_KINDS)[number];

/** At most this many runs in one plan: past it the preview asks for a narrower filter. */
export const BULK_PLAN_MAX_RUNS = 1000;

/** How long a preview stays good for its first confirmation. */
export const BULK_PLAN_TTL_MS = 15 * 60_000;

/** The words an operator types to carry out a plan: its kind and how many runs it admitted. */
export function bulkConfirmWord(kind: BulkPlanKind, admitted: number): string {
  return `${kind} ${admitted}`;
}

export interface BulkConfirmationInput {
  plan: { kind: BulkPlanKind; confirmWord: string; expiresAt: Date; confirmedAt: Date | null };
  /** What the person typed. */
  word: string;
  /** The companies of the plan's runs. */
  planCompanies: readonly string[];
  /** The confirming person's companies. */
  scope: { all: true } | { all: false; companies: readonly string[] };
  now: Date;
}

export type BulkConfirmation =
  | { verdict: "proceed"; first: boolean; refusal: null }
  | { verdict: "refused"; reason: "out_of_scope" | "wrong_word" | "expired"; refusal: string };

/**
 * A confirmation proceeds when the person's companies hold every run of the plan, the typed
 * word is the plan's, and the plan is not past its expiry — unless an earlier confirmation
 * already started it: then a repeat (a second tab, a double click, a confirmation whose reply
 * was lost) only finishes what is left and answers the same per-run results.
 */
export function admitBulkConfirmation(input: BulkConfirmationInput): BulkConfirmation {
  const { plan, scope } = input;
  if (!scope.all) {
    const mine = new Set(scope.companies);
    const outside = input.planCompanies.filter((c) => !mine.has(c)).length;
    if (outside > 0) {
      return { verdict: "refused", reason: "out_of_scope", refusal: `This plan holds runs of ${outside === 1 ? "a company" : `${outside} companies`} outside yours; preview the set yourself.` };
    }
  }
  if (input.word.trim() !== plan.confirmWord) {
    return { verdict: "refused", reason: "wrong_word", refusal: `Type "${plan.confirmWord}" to ${plan.kind} the runs this plan admitted.` };
  }
  if (plan.confirmedAt) return { verdict: "proceed", first: false, refusal: null };
  if (input.now.getTime() >= plan.expiresAt.getTime()) {
    return { verdict: "refused", reason: "expired", refusal: `This preview expired at ${plan.expiresAt.toISOString()} (a preview is good for ${BULK_PLAN_TTL_MS / 60_000} minutes); preview the set again.` };
  }
  return { verdict: "proceed", first: true, refusal: null };
}
