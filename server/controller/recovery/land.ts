import type { EnvironmentLease, Prisma, Run } from "../../db/client";
import { assertNever, restingCode, type RecoveryOutcome, type WalkStep } from "../../engine";
import type { ControllerContext } from "../context";
import { fenced, whileCurrent, type RunFence } from "../fence";
import { finishRunFailed, land, type Landing } from "../outcome";
import { appendEvent, json, recordProof, type RunEventInput } from "../records";
import { markRunLeases, takeDownLeases } from "../teardown";
import type { ExecutorStatus } from "./claim";
import { targetOf, type RecoveryReadings } from "./readings";

type Continue = Extract<RecoveryOutcome, { kind: "continue" }>;
type LandingEvent = Omit<RunEventInput, "runId" | "bootId">;

/**
 * Carries out the recovery walk's outcome (engine/recovery-walk.ts) through one fenced landing
 * (§2.10): the proofs not stored yet, the claims they decide, the run's new phase and its events
 * land together or not at all. A runner reattached to or resumed is acted on after its proofs
 * landed and before the run is written as running again. Returns whether the run goes on.
 */
export async function landOutcome(ctx: ControllerContext, run: Run, status: ExecutorStatus, outcome: RecoveryOutcome, steps: WalkStep[], r: RecoveryReadings): Promise<boolean> {
  const proofs: NonNullable<Landing["proofs"]> = steps.map((s) => ({
    verdict: s.verdict,
    evidence: s.evidence,
    links: { leaseId: s.leaseId, sandboxId: s.sandboxId },
    ...(s.claim ? { claim: { draft: s.claim, restartKind: status.restartKind } } : {}),
  }));
  const events: LandingEvent[] = [];
  if (run.phase === "bootstrapping" && steps.some((s) => s.verdict.kind === "lease_binding")) {
    events.push({ type: "recovery_continues", data: { why: "the runner had opened its session before the restart" } });
  }
  const files = r.evidence.files;
  if (files?.ok && files.localProof && steps.some((s) => s.verdict.kind === "bootstrap_restart")) {
    events.push({ type: "local_restart_proof", data: { recordedAt: files.localProof.recordedAt, home: ctx.config.home } });
  }
  switch (outcome.kind) {
    case "continue":
      await goOn(ctx, run, outcome, { proofs, events }, r);
      return true;
    case "end": {
      const runnerState = r.stoppedRunnerState ?? r.runnerState;
      if (outcome.verdict.kind === "bootstrap_restart" && runnerState) {
        await fenced(ctx, run).update({ where: { id: run.id }, data: { lastRunnerState: json(runnerState), lastRunnerStateAt: new Date() } });
      }
      if (outcome.verdict.kind === "lease_binding") {
        // The run rests where the verdict says (§2.1): its continuation code; the refusal code stays on the proof.
        events.push({ type: "continuation_blocked", data: { code: outcome.verdict.code, restsIn: restingCode(outcome.verdict) } });
      }
      await finishRunFailed(ctx, run, outcome.verdict, outcome.detail, {
        recoveryState: outcome.recoveryState,
        ...(outcome.recoveryMode ? { recoveryMode: outcome.recoveryMode } : {}),
        landing: { proofs, events },
      });
      return false;
    }
    case "look_again":
      // Not now (a sandbox in transition, a start that did not take): the proofs say why, the attempt is counted (§2.8).
      for (const s of steps) await recordRunProof(ctx, run, s);
      throw new Error(outcome.message);
    case "read_failed":
      // Recovery's reads throw themselves; an answer like this is the forecast's.
      throw new Error(outcome.what);
    default:
      return assertNever(outcome);
  }
}

async function goOn(ctx: ControllerContext, run: Run, o: Continue, landing: { proofs: NonNullable<Landing["proofs"]>; events: LandingEvent[] }, r: RecoveryReadings): Promise<void> {
  const boot = ctx.identity.bootId;
  const phase = (data: Prisma.RunUpdateInput): Prisma.RunUpdateInput => ({ ...data, status: run.status === "suspended" ? "starting" : run.status });
  const lands = (data: Prisma.RunUpdateInput, events: LandingEvent[] = [], then?: (tx: Prisma.TransactionClient, claims: Map<string, string>) => Promise<void>) =>
    whileCurrent(ctx, run, async (tx) => {
      const claims = await land(ctx, tx, run.id, { proofs: landing.proofs, events: [...landing.events, ...events] });
      await tx.run.update({ where: { id: run.id }, data: phase(data) });
      await then?.(tx, claims);
    });
  switch (o.path) {
    case "acquire_again":
    case "bootstrap_fresh":
      await lands({ phase: o.phase, recoveryMode: o.recoveryMode, recoveryState: null }, [{ type: "recovery_continues", data: { mode: o.recoveryMode, why: o.why } }]);
      return;
    case "finish":
      await lands({ phase: o.phase, recoveryMode: o.recoveryMode, recoveryState: null });
      return;
    case "next_turn_sandbox": {
      if (!o.giveBack) {
        await lands({ phase: o.phase, recoveryMode: o.recoveryMode, recoveryState: null });
        return;
      }
      // A per-turn sandbox still bound, its runner stopped with every turn recorded: taken out of
      // service in the landing that moves the run on, then torn down; a controller that lost the run touches nothing.
      const giveBack = o.giveBack;
      let marked: Awaited<ReturnType<typeof markRunLeases>> = [];
      await lands({ phase: o.phase, recoveryMode: o.recoveryMode, recoveryState: null }, [{ type: "turn_sandbox_released", data: { turn: run.turnsDone, leaseId: giveBack.id, why: o.why } }], async (tx) => {
        marked = await markRunLeases(tx, run.id);
      });
      await takeDownLeases(ctx, run.id, marked);
      return;
    }
    case "bootstrap_restart": {
      const state = r.stoppedRunnerState ?? r.runnerState;
      const proofSource = (landing.proofs.at(-1)?.verdict as { proofSource?: string } | undefined)?.proofSource ?? null;
      await lands(
        { phase: o.phase, recoveryMode: o.recoveryMode, recoveryState: null, ...(state ? { lastRunnerState: json(state), lastRunnerStateAt: new Date() } : {}) },
        [],
        async (tx, claims) => {
          await appendEvent(tx, run.id, "bootstrap_restart", boot, { claimId: claims.get("bootstrap_incomplete") ?? null, proofSource });
        },
      );
      return;
    }
    case "reattach":
    case "resume":
      await reattach(ctx, run, o, landing, r);
      return;
    default:
      return assertNever(o.path);
  }
}

/** §2.1 admitted: the runner is resumed on its own state when it died, then reattached to, and the run is running again. */
async function reattach(ctx: ControllerContext, run: Run, o: Continue, landing: { proofs: NonNullable<Landing["proofs"]>; events: LandingEvent[] }, r: RecoveryReadings): Promise<void> {
  const boot = ctx.identity.bootId;
  const lease: EnvironmentLease | null = targetOf(r);
  if (!lease?.providerLeaseId) throw new Error(`run ${run.id}: a reattach without a sandbox`);
  const sandboxId = lease.providerLeaseId;
  // The proofs and claims land first: nothing is done to the runner without them (§2.10).
  const claims = await whileCurrent(ctx, run, (tx) => land(ctx, tx, run.id, landing));
  if (o.path === "resume") {
    const resumed = await ctx.runner.resume(sandboxId, { runId: run.id, runnerInstanceId: run.runnerInstanceId!, sessionId: run.sessionId! });
    await appendEvent(ctx.db, run.id, "runner_resumed", boot, { claimId: claims.get("resume_dead_runner") ?? null, sandboxId, pid: resumed.process?.pid ?? null, resumes: resumed.resumes ?? null });
  }
  // A reattach that fails throws and counts as a failed attempt (§2.8).
  const reattached = await ctx.runner.reattach(sandboxId);
  const checkpoint = (run.checkpoint ?? {}) as Record<string, unknown>;
  await fenced(ctx, run).update({
    where: { id: run.id },
    data: {
      status: "running",
      phase: "session_open",
      recoveryState: null,
      lastRunnerState: json(reattached),
      lastRunnerStateAt: new Date(),
      checkpoint: json({ ...checkpoint, turn: run.turnsDone, sessionId: run.sessionId, leaseId: lease.id, providerLeaseId: sandboxId, remoteCwd: r.evidence.run.checkpoint.remoteCwd, at: new Date().toISOString() }),
    },
  });
  await appendEvent(ctx.db, run.id, "runner_reattached", boot, { sandboxId, reconnectCount: reattached.reconnectCount });
}

/** A proof about a run this controller executes lands only while its claimed epoch is current (§2.10); a step with a claim lands only with its outcome. */
export async function recordRunProof(ctx: ControllerContext, run: RunFence, s: Pick<WalkStep, "verdict" | "evidence" | "leaseId" | "sandboxId">): Promise<void> {
  await whileCurrent(ctx, run, (tx) => recordProof(tx, s.verdict, s.evidence, ctx.identity.bootId, { runId: run.id, leaseId: s.leaseId, sandboxId: s.sandboxId }));
}
