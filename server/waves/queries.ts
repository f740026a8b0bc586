import { z } from "zod";
import { text } from "../text";
import type { ChaosWave, Db } from "../db/client";
import { AppError } from "../errors";
import { CHECK_IDS, type CheckId, type WaveReport, type WaveSummary, waveReportSchema } from "../shared/wave-report";
import { companyWhere, inScope, type CompanyScope } from "../shared/roles";

/** The dashboard's read model of chaos waves: list, one wave, and two side by side. */

export const waveListItemSchema = z.object({
  id: z.string(),
  seed: z.number().int(),
  status: z.string(),
  passed: z.boolean().nullable(),
  imported: z.boolean(),
  startedAt: z.date(),
  finishedAt: z.date().nullable(),
  tasks: z.number().int(),
  tasksPassed: z.number().int(),
  kills: z.array(z.string()),
  /** Of the planned kills, how many landed as planned; null for waves recorded before this was tracked or still running. */
  killsLanded: z.number().int().nullable(),
  faults: z.array(z.string()),
  orphans: z.number().int(),
});

export const waveListOutput = z.array(waveListItemSchema);

interface StoredConfig {
  kills?: string[];
  faults?: string[];
  tasks?: number;
}

export async function listWaves(db: Db, scope: CompanyScope): Promise<z.infer<typeof waveListOutput>> {
  const waves = await db.chaosWave.findMany({ where: companyWhere(scope), orderBy: [{ startedAt: "desc" }, { id: "desc" }], take: 200 });
  return waves.map(toListItem);
}

/** The newest wave this person may see, as the list shows it. */
export async function latestWave(db: Db, scope: CompanyScope): Promise<z.infer<typeof waveListItemSchema> | null> {
  const w = await db.chaosWave.findFirst({ where: companyWhere(scope), orderBy: [{ startedAt: "desc" }, { id: "desc" }] });
  return w ? toListItem(w) : null;
}

function toListItem(w: ChaosWave): z.infer<typeof waveListItemSchema> {
  const summary = w.summary as Partial<WaveSummary> | null;
  const config = (w.config ?? {}) as StoredConfig;
  const plan = w.plan as { tasks?: unknown[]; kills?: Array<{ kind: string }>; faults?: string[] } | null;
  return {
    id: w.id,
    seed: w.seed,
    status: w.status,
    passed: w.passed,
    imported: w.imported,
    startedAt: w.startedAt,
    finishedAt: w.finishedAt,
    tasks: summary?.tasks ?? plan?.tasks?.length ?? config.tasks ?? 0,
    tasksPassed: summary?.tasksPassed ?? 0,
    kills: config.kills ?? plan?.kills?.map((k) => k.kind) ?? [],
    killsLanded: summary?.kills ? Object.values(summary.kills).reduce((n, k) => n + (k?.landed ?? 0), 0) : null,
    faults: config.faults ?? [],
    orphans: Array.isArray(w.orphanSandboxes) ? w.orphanSandboxes.length : 0,
  };
}

export const waveIdInput = z.object({ id: text(80) });

const liveTaskSchema = z.object({ key: z.string(), runId: z.string(), status: z.string(), turns: z.string(), failureCode: z.string().nullable(), restarts: z.number().int() });

export const waveDetailOutput = z.object({
  id: z.string(),
  status: z.string(),
  passed: z.boolean().nullable(),
  imported: z.boolean(),
  startedAt: z.date(),
  finishedAt: z.date().nullable(),
  /** The full report once the wave has finished (null while it runs). */
  report: waveReportSchema.nullable(),
  summary: z.unknown().nullable(),
  plan: z.unknown(),
  /** While it runs: where each task's latest run stands. */
  live: z.array(liveTaskSchema),
});

export async function getWave(db: Db, scope: CompanyScope, id: string): Promise<z.infer<typeof waveDetailOutput>> {
  const w = await db.chaosWave.findUnique({ where: { id } });
  if (!w || !inScope(scope, w.companyId)) throw new AppError("NOT_FOUND", `wave ${id} does not exist`);
  let live: z.infer<typeof liveTaskSchema>[] = [];
  if (w.status === "running") {
    const runs = await db.run.findMany({ where: { waveId: id }, orderBy: { createdAt: "asc" } });
    const latest = new Map<string, (typeof runs)[number]>();
    for (const r of runs) latest.set(r.taskId, r);
    live = [...latest.entries()].map(([taskId, r]) => ({
      key: taskId.slice(id.length + 1) || taskId,
      runId: r.id,
      status: r.status,
      turns: `${r.turnsDone}/${r.turnsPlanned}`,
      failureCode: r.failureCode,
      restarts: r.restarts,
    }));
  }
  const parsed = w.report ? waveReportSchema.safeParse(w.report) : null;
  return {
    id: w.id,
    status: w.status,
    passed: w.passed,
    imported: w.imported,
    startedAt: w.startedAt,
    finishedAt: w.finishedAt,
    report: parsed?.success ? parsed.data : null,
    summary: w.summary ?? null,
    plan: w.plan,
    live,
  };
}

export const waveCompareInput = z.object({ a: text(80), b: text(80) });

const sideSchema = z.object({
  id: z.string(),
  seed: z.number().int(),
  startedAt: z.string(),
  tasks: z.number().int(),
  tasksPassed: z.number().int(),
  passed: z.boolean(),
  checks: z.record(z.string(), z.object({ pass: z.number().int(), fail: z.number().int() })),
  orphans: z.number().int(),
  retries: z.number().int(),
});

export const waveCompareOutput = z.object({
  a: sideSchema,
  b: sideSchema,
  /** Task × check cells whose result differs (tasks matched by key: t01, t02, …). */
  changed: z.array(z.object({ task: z.string(), check: z.enum(CHECK_IDS), a: z.boolean().nullable(), b: z.boolean().nullable() })),
  codes: z.array(z.object({ code: z.string(), a: z.number().int(), b: z.number().int(), change: z.enum(["appeared", "vanished", "more", "fewer", "same"]) })),
});

function sideOf(r: WaveReport): z.infer<typeof sideSchema> {
  const checks = Object.fromEntries(CHECK_IDS.map((c) => [c, { pass: 0, fail: 0 }]));
  // A check the report did not run (R7, in a report made before it existed) counts as neither.
  for (const t of r.tasks) for (const c of CHECK_IDS) {
    const result = t.checks[c];
    if (result) checks[c]![result.ok ? "pass" : "fail"] += 1;
  }
  return {
    id: r.id,
    seed: r.seed,
    startedAt: r.startedAt,
    tasks: r.tasks.length,
    tasksPassed: r.tasks.filter((t) => t.passed).length,
    passed: r.passed,
    checks,
    orphans: r.orphanSandboxes.length,
    retries: r.tasks.reduce((n, t) => n + t.retriesNeeded, 0),
  };
}

function codeCounts(r: WaveReport): Map<string, number> {
  const m = new Map<string, number>();
  for (const t of r.tasks) for (const c of t.failureCodes) m.set(c, (m.get(c) ?? 0) + 1);
  return m;
}

/** How a fix is judged: "1 of 6 before, 3 of 6 after", and what changed where. */
export async function compareWaves(db: Db, scope: CompanyScope, aId: string, bId: string): Promise<z.infer<typeof waveCompareOutput>> {
  const load = async (id: string) => {
    const w = await db.chaosWave.findUnique({ where: { id }, select: { report: true, status: true, companyId: true } });
    if (!w || !inScope(scope, w.companyId)) throw new AppError("NOT_FOUND", `wave ${id} does not exist`);
    if (!w.report) throw new AppError("PRECONDITION_FAILED", `wave ${id} has not finished (${w.status})`);
    return waveReportSchema.parse(w.report);
  };
  const [a, b] = await Promise.all([load(aId), load(bId)]);
  const keys = [...new Set([...a.tasks, ...b.tasks].map((t) => t.id))].sort();
  const changed: z.infer<typeof waveCompareOutput>["changed"] = [];
  for (const key of keys) {
    const ta = a.tasks.find((t) => t.id === key);
    const tb = b.tasks.find((t) => t.id === key);
    for (const check of CHECK_IDS) {
      const va = ta?.checks[check as CheckId]?.ok ?? null;
      const vb = tb?.checks[check as CheckId]?.ok ?? null;
      if (va !== vb) changed.push({ task: key, check, a: va, b: vb });
    }
  }
  const ca = codeCounts(a);
  const cb = codeCounts(b);
  const codes = [...new Set([...ca.keys(), ...cb.keys()])].sort().map((code) => {
    const x = ca.get(code) ?? 0;
    const y = cb.get(code) ?? 0;
    const change = x === 0 ? "appeared" : y === 0 ? "vanished" : y > x ? "more" : y < x ? "fewer" : "same";
    return { code, a: x, b: y, change: change as "appeared" | "vanished" | "more" | "fewer" | "same" };
  });
  return { a: sideOf(a), b: sideOf(b), changed, codes };
}
