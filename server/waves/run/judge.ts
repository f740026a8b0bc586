import type { Db } from "../../db/client";
import { checkForecasts } from "../../forecasts/check";
import { isUuid } from "../../lib/ids";
import { DaytonaProvider } from "../../providers/daytona";
import { LABEL_KEYS } from "../../providers/labels";
import { wavePassed, type KillRecord, type WaveEvent, type WaveReport } from "../../shared/wave-report";
import { evaluateTask, type CollectedRun } from "../checks";
import { readMarkers } from "../markers";
import { storeWaveReport } from "../store";
import { WAVE_COMPANY, waveConfig, type WaveContext } from "./context";
import type { KillEffects } from "./faults-at-kill";
import { faultRecords } from "./fault-rules";
import type { Decoy } from "./setup";

/**
 * The wave's judgement (docs/rules.md §5): every task's runs, proofs, leases and sandboxes
 * collected once the controllers are stopped, R1–R7 per task (`evaluateTask`), the kills and
 * faults as they landed, the report stored; then the wave takes its decoys away again.
 */
export async function judgeWave(
  ctx: WaveContext,
  input: { startedAt: Date; decoys: Decoy[]; kills: KillRecord[]; effects: KillEffects; deaths: Map<number, number>; events: WaveEvent[] },
): Promise<WaveReport> {
  const { db, admin, id, instanceId, plan, markers, note } = ctx;
  const { decoys } = input;
  // The forecasts against the restarts (the controllers' ticks did most; the last one is stopped).
  await checkForecasts(db, instanceId, { limit: 10_000 });
  const forecastRuns = await db.forecastRun.findMany({
    where: { forecast: { waveId: id } },
    select: { forecastId: true, runId: true, prediction: true, path: true, code: true, outcome: true, actual: true },
  });
  const everySandbox = await admin.sandboxes({ includeDestroyed: true });
  const sandboxes = everySandbox.filter((s) => s.labels[LABEL_KEYS.instance] === instanceId);
  const decoyState = new Map(everySandbox.map((s) => [s.id, s.state]));
  const decoyResults = decoys.map((d) => ({ id: d.id, kind: d.kind, intact: decoyState.get(d.id) !== undefined && decoyState.get(d.id) !== "destroyed" }));
  const decoyIds = new Set(decoys.map((d) => d.id));
  const tasks = [];
  for (const task of plan.tasks) {
    const runs = await collectRuns(db, `${id}-${task.key}`);
    const runIds = runs.map((r) => r.id);
    const proofs = await db.proof.findMany({ where: { runId: { in: runIds } }, select: { runId: true, kind: true, verdict: true, evidence: true } });
    const leases = await db.environmentLease.findMany({ where: { runId: { in: runIds } } });
    tasks.push(
      evaluateTask({
        key: task.key,
        taskId: `${id}-${task.key}`,
        runs,
        proofs: proofs.map((p) => ({ runId: p.runId!, kind: p.kind, verdict: p.verdict, evidence: p.evidence })),
        leases: leases.map((l) => ({ id: l.id, runId: l.runId, status: l.status, fencedUntil: l.fencedUntil?.toISOString() ?? null, providerLeaseId: l.providerLeaseId })),
        sandboxes: sandboxes.filter((s) => !decoyIds.has(s.id) && runIds.includes(s.labels[LABEL_KEYS.run] ?? "")),
        decoys: decoyResults,
        ...(markers ? { markers: Object.fromEntries(runIds.map((r) => [r, readMarkers(markers, r)])) } : {}),
        forecasts: forecastRuns
          .filter((f) => runIds.includes(f.runId))
          .map((f) => ({ forecastId: f.forecastId, runId: f.runId, prediction: f.prediction, path: f.path, code: f.code, outcome: f.outcome, differences: (f.actual as { differences?: unknown } | null)?.differences ?? null })),
      }),
    );
  }
  const orphanSandboxes = sandboxes
    .filter((s) => !decoyIds.has(s.id) && s.state !== "destroyed" && s.state !== "destroying")
    .map((s) => ({ id: s.id, name: s.name, state: s.state, run: s.labels[LABEL_KEYS.run] ?? null }));
  const reclaims = await reclaimTimes(db, instanceId, input.deaths, ctx.t0);
  const faults = await faultRecords(admin, plan, ctx.runsByTask, await input.effects.records([...ctx.runsByTask.values()]));
  for (const f of faults.filter((x) => !x.fired)) note("fault", `${f.task} ${f.fault} did not fire: ${f.detail}`);
  const report: WaveReport = {
    id,
    seed: ctx.options.seed,
    instanceId,
    companyId: WAVE_COMPANY,
    startedAt: input.startedAt.toISOString(),
    finishedAt: new Date().toISOString(),
    plan,
    passed: wavePassed({ tasks, orphanSandboxes, kills: input.kills, faults }),
    orphanSandboxes,
    reclaims,
    decoys: decoyResults,
    events: input.events,
    tasks,
    kills: input.kills,
    faults,
  };
  await storeWaveReport(db, report, { config: waveConfig(ctx.options) });
  // The decoys were the wave's own; it takes them away again, by id.
  const cleaner = new DaytonaProvider({ apiUrl: ctx.emuUrl, apiKey: ctx.emulatorKey });
  for (const d of decoys) await cleaner.destroy(d.id).catch(() => {});
  return report;
}

async function collectRuns(db: Db, taskId: string): Promise<CollectedRun[]> {
  const runs = await db.run.findMany({ where: { taskId }, include: { events: { where: { type: { in: ["retry_scheduled", "run_failed", "startup_failed"] } } } } });
  return runs.map((r) => ({
    id: r.id,
    status: r.status,
    outcome: r.outcome,
    failureCode: r.failureCode,
    canRetry: r.canRetry,
    nextAction: r.nextAction,
    previousRunId: r.previousRunId,
    restarts: r.restarts,
    turnsDone: r.turnsDone,
    turnsPlanned: r.turnsPlanned,
    createdAt: r.createdAt.toISOString(),
    startedAt: r.startedAt?.toISOString() ?? null,
    finishedAt: r.finishedAt?.toISOString() ?? null,
    codesSeen: [
      ...new Set([
        ...(r.failureCode ? [r.failureCode] : []),
        ...r.events.map((e) => (e.data as { code?: string } | null)?.code).filter((c): c is string => typeof c === "string"),
      ]),
    ],
  }));
}

/**
 * Time from the moment an intent's sandbox became an orphan — its creator died or gave
 * up waiting for the provider, whichever came first — to the sandbox's destruction.
 */
async function reclaimTimes(db: Db, instanceId: string, deaths: Map<number, number>, t0: number) {
  const intents = await db.sandboxCreationIntent.findMany({ where: { instanceId, status: "reclaimed" }, include: { lease: true } });
  const gaveUp = await db.runEvent.findMany({ where: { type: "create_failed", runId: { in: intents.map((i) => i.runId).filter(isUuid) } } });
  return intents.map((i) => {
    const destroyedAt = i.lease?.endedAt?.getTime() ?? i.resolvedAt?.getTime() ?? Date.now();
    const creatorPid = (i.creator as { pid?: number } | null)?.pid;
    const died = creatorPid !== undefined ? deaths.get(creatorPid) : undefined;
    const candidates = [
      died !== undefined ? t0 + died : Infinity,
      ...gaveUp.filter((e) => (e.data as { operationId?: string } | null)?.operationId === i.id).map((e) => e.at.getTime()),
    ].filter((t) => t <= destroyedAt);
    const orphanedAt = candidates.length ? Math.min(...candidates) : i.createdAt.getTime();
    return { intentId: i.id, sandboxId: i.lease?.providerLeaseId ?? null, seconds: Math.max(0, (destroyedAt - orphanedAt) / 1000) };
  });
}
