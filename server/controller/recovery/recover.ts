import type { Run } from "../../db/client";
import { RECOVERY_ACTS, walkRecovery } from "../../engine";
import type { ControllerContext } from "../context";
import { activeLease } from "../execute";
import { readKnownRunnerReleases } from "../known-runner-releases";
import { appendEvent } from "../records";
import { recoveryRules } from "../rules";
import type { ExecutorStatus } from "./claim";
import { landOutcome, recordRunProof } from "./land";
import { answerNeed, MAX_SANDBOX_START_ATTEMPTS, walkLease, walkRun, type RecoveryReadings } from "./readings";

/**
 * How an interrupted run goes on, with proof (docs/rules.md §2.1, §2.2, §2.8): the engine's
 * `walkRecovery` (engine/recovery-walk.ts) says what it needs next or how the run goes on; this
 * shell answers each need (recovery/readings.ts) and carries out the outcome (recovery/land.ts).
 * One pass: ask, answer, ask again — the order lives in the engine only, and the restart
 * forecast walks the same function. Returns true when the run may continue (the caller executes
 * it from its phase), false when it was ended. A read that fails throws: the controller counts
 * it as a failed recovery attempt (§2.8, recovery/attempt.ts).
 */
export async function recoverRun(ctx: ControllerContext, run: Run, status: ExecutorStatus): Promise<boolean> {
  const boot = ctx.identity.bootId;
  if (status.proof) {
    await recordRunProof(ctx, run, { verdict: status.proof.verdict, evidence: status.proof.evidence, leaseId: null, sandboxId: null });
  }
  await appendEvent(ctx.db, run.id, "recovery_started", boot, { restartKind: status.restartKind, executorWas: status.reason, phase: run.phase });

  const active = await activeLease(ctx, run);
  const bound = active?.providerLeaseId ? active : null;
  const readings: RecoveryReadings = {
    evidence: {
      now: new Date().toISOString(),
      run: walkRun(run),
      limits: { maxSandboxStartAttempts: MAX_SANDBOX_START_ATTEMPTS },
      lease: bound ? walkLease(bound) : null,
      runnerReleases: await readKnownRunnerReleases(ctx.db),
    },
    leases: new Map(bound ? [[bound.id, bound]] : []),
    runnerState: null,
    stoppedRunnerState: null,
  };
  const rules = recoveryRules(ctx.config);
  // Steps already stored: the walk is prefix-stable, so each answer's steps begin with these.
  let stored = 0;
  for (let asked = 0; asked < 8; asked++) {
    const answer = walkRecovery(readings.evidence, rules);
    if ("outcome" in answer) return landOutcome(ctx, run, status, answer.outcome, answer.steps.slice(stored), readings);
    // An act on the lease or the sandbox is never without its proof: the steps so far are stored first.
    if (RECOVERY_ACTS.has(answer.need)) {
      for (const s of answer.steps.slice(stored)) await recordRunProof(ctx, run, s);
      stored = answer.steps.length;
    }
    await answerNeed(ctx, run, answer.need, readings);
  }
  throw new Error(`run ${run.id}: the recovery walk kept asking for readings`);
}
