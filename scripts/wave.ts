/**
 * `npm run wave -- --seed 6402 --tasks 6 --kills K1,K2,K4,K15 --faults bind,reject,late,unconnected --concurrency 2`
 *   runs a restart-chaos wave and stores it; exit 0 only when every check passed.
 * `npm run wave -- import FILE` stores a report made elsewhere; `export ID FILE`; `list`.
 */
import fs from "node:fs";
import { Command, InvalidArgumentError } from "commander";
import { createDb } from "../server/db/client";
import { openDatabase } from "../server/db/embedded";
import { migrate } from "../server/db/migrate";
import { env } from "../server/env";
import { AppError } from "../server/errors";
import { CHECK_IDS, CHECK_TITLES, describeKills, FAULT_NAMES, KILL_KINDS, killCounts, summarise, waveReportSchema, type FaultName, type KillKind, type WaveReport } from "../server/shared/wave-report";
import { runWave, type WaveProgress } from "../server/waves/runner";
import { importWaveReport, loadWaveReport } from "../server/waves/store";

const out = (line = "") => process.stdout.write(`${line}\n`);

function list<T extends string>(allowed: readonly T[], what: string) {
  return (value: string): T[] => {
    const items = value.split(",").map((v) => v.trim()).filter(Boolean);
    for (const item of items) {
      if (!allowed.includes(item as T)) throw new InvalidArgumentError(`unknown ${what} ${item} (one of ${allowed.join(", ")})`);
    }
    return items as T[];
  };
}

function int(name: string, min: number, max: number) {
  return (value: string): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < min || n > max) throw new InvalidArgumentError(`${name} must be a whole number from ${min} to ${max}`);
    return n;
  };
}

async function withDb<T>(fn: (db: ReturnType<typeof createDb>) => Promise<T>): Promise<T> {
  const database = await openDatabase({ env });
  await migrate(database.url);
  const db = createDb(database.url, { max: 2 });
  try {
    return await fn(db);
  } finally {
    await db.$disconnect();
    await database.stop();
  }
}

function progressLine(p: WaveProgress): string {
  const tasks = p.tasks.map((t) => `${t.key}:${short(t.status)}${t.status === "running" ? ` ${t.turns}` : ""}`).join(" ");
  return `[${(p.elapsedMs / 1000).toFixed(1).padStart(5)} s] controller #${p.controller} · kills landed ${p.killsLanded}/${p.killsPlanned} · ${tasks}`;
}

function short(status: string): string {
  return { queued: "queued", starting: "start", running: "run", suspended: "susp", succeeded: "ok", failed: "FAIL", cancelled: "cancel" }[status] ?? status;
}

function printSummary(report: WaveReport) {
  const summary = summarise(report);
  out();
  out(`wave ${report.id}  seed ${report.seed}  ${summary.tasksPassed}/${summary.tasks} tasks passed  ${report.passed ? "PASSED" : "FAILED"}`);
  out();
  out(`  task  ${CHECK_IDS.map((c) => c.padEnd(3)).join(" ")}  restart  retries  failure codes`);
  for (const t of report.tasks) {
    out(`  ${t.id.padEnd(4)}  ${CHECK_IDS.map((c) => (t.checks[c] === undefined ? "-  " : t.checks[c].ok ? "✓  " : "✗  ")).join(" ")}  ${(t.restartCrossing ? "yes" : "no").padEnd(7)}  ${String(t.retriesNeeded).padEnd(7)}  ${t.failureCodes.join(", ") || "—"}`);
  }
  out();
  out(`  checks: ${CHECK_IDS.map((c) => `${c} ${summary.checks[c].pass}/${summary.tasks - summary.checks[c].notRun}`).join("  ")}`);
  out(`  kills landed as planned: ${describeKills(summary.kills)}   faults fired: ${summary.faults.fired}/${summary.faults.planned}`);
  for (const k of report.kills) out(`    ${k.landed ? "✓" : "✗"} ${k.kind}${k.crashAt ? ` (${k.crashAt})` : ""}: ${k.detail}`);
  for (const f of report.faults.filter((x) => !x.fired)) out(`    ✗ fault ${f.fault} on ${f.task}: ${f.detail}`);
  out(`  orphan sandboxes: ${report.orphanSandboxes.length}   decoys intact: ${report.decoys.filter((d) => d.intact).length}/${report.decoys.length}`);
  out(`  ${describeTurnMarkers(report)}`);
  if (report.reclaims.length) {
    const secs = report.reclaims.map((r) => r.seconds).sort((a, b) => a - b);
    out(`  reclaimed orphans: ${secs.length}, median ${secs[Math.floor(secs.length / 2)]!.toFixed(1)} s, worst ${secs.at(-1)!.toFixed(1)} s after their creator died`);
  }
  for (const t of report.tasks.filter((x) => !x.passed)) {
    for (const c of CHECK_IDS.filter((c) => t.checks[c]?.ok === false)) out(`  ✗ ${t.id} ${c}: ${t.checks[c]?.detail ?? ""}`);
  }
}

const program = new Command("wave")
  .description("run, import and export restart-chaos waves")
  .option("--seed <n>", "the seed the plan derives from", int("--seed", 0, 2 ** 31 - 1), 6402)
  .option("--tasks <n>", "tasks in the wave", int("--tasks", 1, 100), 6)
  .option("--kills <list>", `kill kinds (${KILL_KINDS.join(",")})`, list(KILL_KINDS, "kill"), ["K1", "K2", "K4", "K15"] as KillKind[])
  .option("--faults <list>", `faults (${FAULT_NAMES.join(",")})`, list(FAULT_NAMES, "fault"), ["bind", "reject", "late", "unconnected"] as FaultName[])
  .option("--concurrency <n>", "runs a controller executes at once", int("--concurrency", 1, 32), 2)
  .option("--retries <n>", "Retries the wave clicks per task", int("--retries", 0, 5), 1)
  .option("--timeout <seconds>", "bound on the wait for every task to settle", int("--timeout", 10, 3600), 240)
  .option("--json <file>", "write the wave report here")
  .option("--break-rule <rule>", "test only: run the controllers with a deliberately broken rule")
  .action(async (opts: { seed: number; tasks: number; kills: KillKind[]; faults: FaultName[]; concurrency: number; retries: number; timeout: number; json?: string; breakRule?: string }) => {
    const tty = process.stdout.isTTY;
    const stop = new AbortController();
    for (const sig of ["SIGINT", "SIGTERM"] as const) process.once(sig, () => stop.abort());
    let lastPrinted = 0;
    const report = await runWave({
      env,
      seed: opts.seed,
      tasks: opts.tasks,
      kills: opts.kills,
      faults: opts.faults,
      concurrency: opts.concurrency,
      retries: opts.retries,
      timeoutMs: opts.timeout * 1000,
      breakRule: opts.breakRule as never,
      signal: stop.signal,
      onEvent: (e) => {
        if (tty) process.stdout.write("\r\x1b[K");
        out(`[${(e.atMs / 1000).toFixed(1).padStart(5)} s] ${e.kind}: ${e.detail}`);
      },
      onProgress: (p) => {
        if (tty) process.stdout.write(`\r\x1b[K${progressLine(p).slice(0, (process.stdout.columns ?? 120) - 1)}`);
        else if (p.elapsedMs - lastPrinted >= 3000) {
          lastPrinted = p.elapsedMs;
          out(progressLine(p));
        }
      },
    });
    if (tty) process.stdout.write("\r\x1b[K");
    printSummary(report);
    if (opts.json) {
      fs.writeFileSync(opts.json, `${JSON.stringify(report, null, 2)}\n`);
      out(`\nreport written to ${opts.json}`);
    }
    process.exitCode = report.passed ? 0 : 1;
  });

program
  .command("import")
  .description("store a wave report made elsewhere (validated; duplicates refused)")
  .argument("<file>", "the report (JSON)")
  .action(async (file: string) => {
    let raw: unknown;
    try {
      raw = JSON.parse(fs.readFileSync(file, "utf8")) as unknown;
    } catch (err) {
      throw new AppError("INVALID_INPUT", `${file}: ${err instanceof Error ? err.message : String(err)}`);
    }
    const report = await withDb((db) => importWaveReport(db, raw));
    out(`imported wave ${report.id} (${report.tasks.length} tasks, ${report.passed ? "passed" : "failed"})`);
  });

program
  .command("export")
  .description("write a stored wave's report")
  .argument("<id>", "wave id")
  .argument("<file>", "where to write it (- for standard output)")
  .action(async (id: string, file: string) => {
    const report = await withDb((db) => loadWaveReport(db, id));
    const text = `${JSON.stringify(report, null, 2)}\n`;
    if (file === "-") process.stdout.write(text);
    else fs.writeFileSync(file, text);
  });

program
  .command("stats")
  .description("pass counts per check, orphans and reclaim times over several wave reports")
  .argument("<files...>", "wave reports (JSON)")
  .action((files: string[]) => {
    const reports = files.map((f) => waveReportSchema.parse(JSON.parse(fs.readFileSync(f, "utf8"))));
    const tasks = reports.flatMap((r) => r.tasks);
    out(`${reports.length} waves, ${tasks.length} tasks, ${reports.filter((r) => r.passed).length} waves passed, ${tasks.filter((t) => t.passed).length} tasks passed`);
    for (const c of CHECK_IDS) out(`  ${c} ${CHECK_TITLES[c].padEnd(17)} ${tasks.filter((t) => t.checks[c]?.ok === true).length}/${tasks.filter((t) => t.checks[c] !== undefined).length}`);
    out(`  restart-crossing tasks ${tasks.filter((t) => t.restartCrossing).length}, Retries needed ${tasks.reduce((n, t) => n + t.retriesNeeded, 0)}`);
    out(`  kills landed / planned: ${describeKills(killCounts(reports.flatMap((r) => r.kills)))}`);
    const faults = reports.flatMap((r) => r.faults);
    out(`  faults fired / planned: ${faults.filter((f) => f.fired).length}/${faults.length}`);
    out(`  orphan sandboxes left at the end: ${reports.reduce((n, r) => n + r.orphanSandboxes.length, 0)}`);
    const secs = reports.flatMap((r) => r.reclaims.map((x) => x.seconds)).sort((a, b) => a - b);
    out(
      secs.length
        ? `  orphans found and reclaimed during the waves: ${secs.length}; time to reclaim median ${secs[Math.floor(secs.length / 2)]!.toFixed(1)} s, worst ${secs.at(-1)!.toFixed(1)} s`
        : "  no orphan had to be reclaimed",
    );
    const codes = new Map<string, number>();
    for (const t of tasks) for (const code of t.failureCodes) codes.set(code, (codes.get(code) ?? 0) + 1);
    out(`  failure codes (tasks): ${[...codes].sort((a, b) => b[1] - a[1]).map(([c, n]) => `${c} ${n}`).join(", ") || "none"}`);
  });

program
  .command("list")
  .description("stored waves, newest first")
  .action(async () => {
    const waves = await withDb((db) => db.chaosWave.findMany({ orderBy: { startedAt: "desc" }, take: 50 }));
    for (const w of waves) {
      const s = w.summary as { tasksPassed?: number; tasks?: number } | null;
      out(`${w.id}  ${w.status.padEnd(7)}  ${s?.tasksPassed ?? "?"}/${s?.tasks ?? "?"} tasks${w.imported ? "  (imported)" : ""}`);
    }
  });

program.parseAsync(process.argv).catch((err: unknown) => {
  const message = err instanceof Error ? err.message : String(err);
  process.stderr.write(`wave: ${message}\n`);
  process.exit(err instanceof AppError && (err.code === "INVALID_INPUT" || err.code === "CONFLICT") ? 2 : 1);
});

/** R3's marker evidence, summed: each turn's side effect counted by the lines its agent wrote. */
function describeTurnMarkers(report: WaveReport): string {
  const perRun = report.tasks.flatMap((t) => Object.values((t.checks.R3 as { turnMarkers?: Record<string, number[]> }).turnMarkers ?? {}));
  if (perRun.length === 0) return "turn markers: not read (the emulator's sandboxes do not run on this host)";
  const lines = perRun.reduce((n, l) => n + l.length, 0);
  const ok = report.tasks.every((t) => t.checks.R3.ok);
  return `turn markers: ${lines} line(s) over ${perRun.length} run(s): ${ok ? "every turn ran exactly once" : "see R3 below"}`;
}
