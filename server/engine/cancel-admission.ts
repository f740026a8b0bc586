import { isLiveRunStatus } from "./run-status";

/** What Cancel admission looks at (docs/rules.md §2.11): the run as it stands now. */
export interface CancelAdmissionInput {
  run: {
    status: string;
    /** Who cancelled it, when it is `cancelled` (null otherwise). */
    cancelledBy: string | null;
    cancelReason: string | null;
  };
}

export type CancelAdmission =
  | { verdict: "admitted"; refusal: null }
  | { verdict: "refused"; reason: "already_ended" | "already_cancelled"; refusal: string };

export type CancelRefusalReason = Extract<CancelAdmission, { verdict: "refused" }>["reason"];

/**
 * Cancel admission (docs/rules.md §2.11), pure: a run that has not ended (queued, starting,
 * running or suspended — a run waiting on a provider outage keeps one of these) may be
 * cancelled; a run that ended, cancelled included, is never touched. `refusal` is the plain
 * sentence a board user reads.
 */
export function admitCancel(input: CancelAdmissionInput): CancelAdmission {
  const { run } = input;
  if (isLiveRunStatus(run.status)) return { verdict: "admitted", refusal: null };
  if (run.status === "cancelled") {
    const by = run.cancelledBy ? ` by ${run.cancelledBy}` : "";
    const why = run.cancelReason ? `: ${run.cancelReason}` : "";
    return { verdict: "refused", reason: "already_cancelled", refusal: `This run was already cancelled${by}${why}.` };
  }
  return { verdict: "refused", reason: "already_ended", refusal: `This run already ended (${run.status}); Cancel stops only a run that has not ended.` };
}
