import { alertWaveFailed } from "../alerts/events";
import type { Db, Prisma } from "../db/client";
import { AppError } from "../errors";
import type { WavePlan } from "./plan";
import { CHECK_IDS, summarise, wavePassed, waveReportSchema, type WaveReport } from "../shared/wave-report";
import { inScope, type CompanyScope } from "../shared/roles";
import { writeAudit, type Actor } from "../audit/write";

const asJson = (v: unknown) => v as Prisma.InputJsonValue;

/** A wave is recorded as soon as it starts, so the dashboard can show it running. */
export async function recordWaveStart(db: Db, wave: { id: string; seed: number; instanceId: string; companyId: string; plan: WavePlan; config: object; startedAt: Date }) {
  await db.chaosWave.create({
    data: { id: wave.id, seed: wave.seed, instanceId: wave.instanceId, companyId: wave.companyId, plan: asJson(wave.plan), config: asJson(wave.config), startedAt: wave.startedAt, status: "running" },
  });
}

/** Stores a finished wave's report with its tasks and checks, all or nothing. */
export async function storeWaveReport(db: Db, report: WaveReport, options: { imported?: boolean; config?: object } = {}): Promise<void> {
  const summary = summarise(report);
  await db.$transaction(async (tx) => {
    const data = {
      seed: report.seed,
      instanceId: report.instanceId,
      companyId: report.companyId,
      status: report.passed ? ("passed" as const) : ("failed" as const),
      passed: report.passed,
      plan: asJson(report.plan),
      orphanSandboxes: asJson(report.orphanSandboxes),
      summary: asJson(summary),
      report: asJson(report),
      imported: options.imported ?? false,
      startedAt: new Date(report.startedAt),
      finishedAt: new Date(report.finishedAt),
    };
    await tx.chaosWave.upsert({ where: { id: report.id }, create: { id: report.id, config: asJson(options.config ?? {}), ...data }, update: data });
    await tx.chaosWaveTask.deleteMany({ where: { waveId: report.id } });
    for (const task of report.tasks) {
      await tx.chaosWaveTask.create({
        data: {
          waveId: report.id,
          key: task.id,
          taskId: task.taskId,
          passed: task.passed,
          restartCrossing: task.restartCrossing,
          failureCodes: task.failureCodes,
          retriesNeeded: task.retriesNeeded,
          runIds: task.runs.map((r) => r.id),
          detail: asJson({ runs: task.runs }),
          checks: { create: CHECK_IDS.flatMap((check) => { const r = task.checks[check]; return r ? [{ check, ok: r.ok, evidence: asJson(r) }] : []; }) },
        },
      });
    }
    // A wave run here that failed (an imported report was run, and alerted, elsewhere).
    if (!report.passed && !options.imported) {
      await alertWaveFailed(tx, { id: report.id, instanceId: report.instanceId, companyId: report.companyId, seed: report.seed, tasks: report.tasks.length, failedTasks: report.tasks.filter((t) => !t.passed).length });
    }
  });
}

/** `npm run wave -- import FILE`: a report made elsewhere, validated; duplicates refused. */
/** waves.import: a stored report, or a refusal; audited either way. */
export async function importWaveReportAudited(db: Db, raw: unknown, actor: Actor, scope: CompanyScope): Promise<WaveReport> {
  try {
    const report = await importWaveReport(db, raw, scope);
    await writeAudit(db, actor, { action: "wave.import", targetType: "wave", targetId: report.id, outcome: "ok" });
    return report;
  } catch (err) {
    await writeAudit(db, actor, { action: "wave.import", targetType: "wave", outcome: "refused", detail: { reason: err instanceof Error ? err.message : String(err) } });
    throw err;
  }
}

export async function importWaveReport(db: Db, raw: unknown, scope: CompanyScope = { all: true }): Promise<WaveReport> {
  const parsed = waveReportSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new AppError("INVALID_INPUT", `report.${issue?.path.join(".") ?? ""}: ${issue?.message ?? "invalid"}`.replace("report.:", "report:"));
  }
  const report = parsed.data;
  if (!inScope(scope, report.companyId)) throw new AppError("FORBIDDEN", `report.companyId: you cannot import waves of company ${report.companyId}`);
  const keys = report.tasks.map((t) => t.id);
  if (new Set(keys).size !== keys.length) throw new AppError("INVALID_INPUT", "report.tasks: task ids repeat");
  const passed = wavePassed(report);
  if (passed !== report.passed) throw new AppError("INVALID_INPUT", `report.passed: says ${report.passed} but its tasks, orphans, kills and faults say ${passed}`);
  for (const t of report.tasks) {
    const ok = CHECK_IDS.every((c) => t.checks[c]?.ok !== false);
    if (ok !== t.passed) throw new AppError("INVALID_INPUT", `report.tasks.${t.id}.passed: says ${t.passed} but its checks say ${ok}`);
  }
  if (await db.chaosWave.findUnique({ where: { id: report.id }, select: { id: true } })) {
    throw new AppError("CONFLICT", `wave ${report.id} is already stored`);
  }
  await storeWaveReport(db, report, { imported: true });
  return report;
}

export async function loadWaveReport(db: Db, id: string, scope: CompanyScope = { all: true }): Promise<WaveReport> {
  const wave = await db.chaosWave.findUnique({ where: { id } });
  if (!wave || !inScope(scope, wave.companyId)) throw new AppError("NOT_FOUND", `wave ${id} does not exist`);
  if (!wave.report) throw new AppError("PRECONDITION_FAILED", `wave ${id} has not finished`);
  return waveReportSchema.parse(wave.report);
}
