import { describe, expect, it } from "vitest";
import { admitCancel } from "./cancel-admission";
import { LIVE_RUN_STATUSES } from "./run-status";

const run = (status: string, over: { cancelledBy?: string | null; cancelReason?: string | null } = {}) => ({
  run: { status, cancelledBy: null, cancelReason: null, ...over },
});

describe("Cancel admission (docs/rules.md §2.11)", () => {
  it.each(LIVE_RUN_STATUSES)("admits a run that is %s (a run waiting on an outage keeps one of these)", (status) => {
    expect(admitCancel(run(status))).toEqual({ verdict: "admitted", refusal: null });
  });

  it.each(["succeeded", "failed"])("refuses a run that already ended (%s), saying so", (status) => {
    expect(admitCancel(run(status))).toEqual({
      verdict: "refused",
      reason: "already_ended",
      refusal: `This run already ended (${status}); Cancel stops only a run that has not ended.`,
    });
  });

  it("refuses a run already cancelled, naming who and why", () => {
    expect(admitCancel(run("cancelled", { cancelledBy: "ana@example.com", cancelReason: "wrong prompt" }))).toEqual({
      verdict: "refused",
      reason: "already_cancelled",
      refusal: "This run was already cancelled by ana@example.com: wrong prompt.",
    });
    expect(admitCancel(run("cancelled")).refusal).toBe("This run was already cancelled.");
  });
});
