import type { Command } from "commander";
import { withCliDatabase } from "../database";
import { CliFailure, EXIT_BAD_INPUT, type CliIO } from "../io";
import { oneLine } from "../one-line";
import { runForecastCheck } from "./forecast-check";
import { FORECAST_PREDICTIONS, type Forecast, type ForecastPrediction, type RunForecast } from "../../shared/forecast";

/** `--fail-on` matched: some run falls in a named class (a deploy gate waits or drains first). */
export const EXIT_FORECAST_FAILED = 3;

interface ForecastOptions {
  json?: boolean;
  verbose?: boolean;
  company: string[];
  run: string[];
  failOn?: string;
  lanes?: string;
  readTimeoutMs?: string;
  check?: boolean;
  forecast?: string;
  /** `--no-store`: take it and print it, storing nothing (read-only credentials, a deploy gate). */
  store: boolean;
  /** `--as EMAIL`: that person takes it — the operator role or up, their companies (forecasts.take's rule). */
  as?: string;
}

/**
 * `runwarden forecast [--json] [--verbose] [--company C]… [--run ID]… [--fail-on ends,operator]`
 * (docs/rules.md §2.12): what a controller restarted now would do to every run that is not
 * terminal — continues (how), ends (code, owner, Retry) or is left for an operator — judged
 * by the engine on evidence read without changing anything. Exit 3 when `--fail-on` names a
 * class some run falls in, 2 on bad usage, 0 otherwise. Progress goes to standard error.
 */
export function registerForecast(program: Command, io: CliIO): void {
  program
    .command("forecast")
    .description("what a controller restart would do to each live run now (continues / ends / operator), read-only; a deploy gate with --fail-on")
    .option("--json", "print the forecast as JSON (every proof with its checks and evidence)")
    .option("--verbose", "print each run's proofs and checks")
    .option("--company <id>", "only this company's runs (repeat it)", collect, [] as string[])
    .option("--run <id>", "only this run (repeat it)", collect, [] as string[])
    .option("--fail-on <classes>", "exit 3 when any run is forecast in one of these classes (comma-separated: continues, ends, operator)")
    .option("--lanes <n>", "runs read at once (default 8)")
    .option("--read-timeout-ms <ms>", "the bound on each provider or runner read (default 10000)")
    .option("--check", "check the stored forecasts against the restarts since: held, or what differed (exit 4 when any differed)")
    .option("--forecast <id>", "with --check: only this stored forecast")
    .option("--as <email>", "act for this person: the operator role or up, only their companies (with --company: those of them), a refusal audited (default: this machine's operator, every company)")
    .option("--no-store", "store nothing (no forecast row, no audit entry): runs on read-only credentials, and against a schema this version is ahead of")
    .action(async (opts: ForecastOptions) => {
      if (opts.check) return runForecastCheck(io, { json: opts.json, forecast: opts.forecast, as: opts.as });
      const failOn = parseFailOn(opts.failOn);
      const lanes = positive("--lanes", opts.lanes);
      const readTimeoutMs = positive("--read-timeout-ms", opts.readTimeoutMs);
      await withCliDatabase("forecast", io, async (db, env) => {
        const [{ servicesFor }, { instanceIdOf }, { uuidSchema }] = await Promise.all([import("../../services"), import("../../db/installation"), import("../../lib/ids")]);
        const runIds = opts.run.length ? opts.run.map((id) => uuidSchema.parse(id)) : undefined;
        // forecasts.take's rule: the operator role, the person's companies — narrowed by --company, never widened.
        const [{ cliActor, machineActor }, { AppError }, { inScope }] = await Promise.all([import("../actor"), import("../../errors"), import("../../shared/roles")]);
        const acting = opts.as === undefined ? { actor: machineActor("operator"), scope: { all: true as const } } : await cliActor(db, opts.as, "operator", "forecast.take");
        const outside = opts.company.filter((c) => !inScope(acting.scope, c));
        if (outside.length) {
          const reason = `${acting.actor.id} does not act for ${outside.map((c) => `company ${c}`).join(", ")}`;
          const { writeAudit } = await import("../../audit/write");
          await writeAudit(db, acting.actor, { action: "forecast.take", targetType: "procedure", targetId: "forecast.take", input: { company: opts.company }, outcome: "refused", detail: { reason } }).catch(() => {});
          throw new AppError("FORBIDDEN", reason);
        }
        const scope = opts.company.length ? { all: false as const, companies: opts.company } : acting.scope;
        const services = servicesFor(db, await instanceIdOf(db, env.RUNWARDEN_INSTANCE_ID));
        let shown = 0;
        const forecast = await services.takeForecast(scope, {
          runIds,
          lanes,
          readTimeoutMs,
          onProgress: (done, total) => {
            // Every tenth, for a forecast long enough to wait on.
            if (total >= 50 && (done === total || done - shown >= Math.ceil(total / 10))) {
              shown = done;
              io.stderr(`forecast: ${done}/${total} runs read\n`);
            }
          },
        });
        // A forecast taken is stored (checked after the next restart: `--check`), audited as forecast.take — unless --no-store.
        let storedLine = "not stored (--no-store)\n";
        if (opts.store) {
          const { storeForecast } = await import("../../forecasts/store");
          const stored = await storeForecast(db, forecast, { instanceId: services.instanceId, actor: acting.actor, source: "cli", scope });
          storedLine = `stored as forecast ${stored.id} (\`runwarden forecast --check\` compares it with the next restart)\n`;
        }
        if (opts.json) io.stdout(`${JSON.stringify(forecast)}\n`);
        else io.stdout(`${render(forecast, opts.verbose === true)}${storedLine}`);
        const failing = forecast.runs.filter((r) => failOn.includes(r.prediction));
        if (failing.length > 0) {
          throw new CliFailure(`runwarden forecast: ${failing.length} run(s) forecast ${failOn.filter((c) => failing.some((r) => r.prediction === c)).join(" or ")} (--fail-on ${failOn.join(",")})`, EXIT_FORECAST_FAILED);
        }
      }, { reads: !opts.store });
    });
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

function parseFailOn(value: string | undefined): ForecastPrediction[] {
  if (value === undefined) return [];
  const classes = value.split(",").map((c) => c.trim()).filter(Boolean);
  const bad = classes.filter((c) => !(FORECAST_PREDICTIONS as readonly string[]).includes(c));
  if (classes.length === 0 || bad.length > 0) {
    throw new CliFailure(`runwarden forecast: --fail-on takes ${FORECAST_PREDICTIONS.join(", ")} (comma-separated), not ${JSON.stringify(bad.length ? bad.join(",") : value)}`, EXIT_BAD_INPUT);
  }
  return classes as ForecastPrediction[];
}

function positive(name: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0) throw new CliFailure(`runwarden forecast: ${name} takes a positive whole number, not ${JSON.stringify(value)}`, EXIT_BAD_INPUT);
  return n;
}

function render(f: Forecast, verbose: boolean): string {
  const lines: string[] = [];
  for (const r of f.runs) {
    lines.push(`${r.runId}  ${r.prediction.padEnd(9)}  ${what(r)}  ${oneLine(r.reason)}`);
    if (!verbose) continue;
    lines.push(`    task ${r.taskId}, ${r.status}${r.phase ? `/${r.phase}` : ""}, epoch ${r.executorEpoch}${r.readError ? `, read error: ${oneLine(r.readError)}` : ""}`);
    for (const p of r.proofs) {
      lines.push(`    ${p.kind}: ${p.verdict}${p.code ? ` (${p.code})` : ""}`);
      for (const c of p.checks) lines.push(`      ${c.ok ? "ok  " : "FAIL"} ${c.name}${c.expected !== undefined ? `  expected ${String(c.expected)}` : ""}${c.actual !== undefined ? `  actual ${oneLine(String(c.actual))}` : ""}`);
    }
  }
  const c = f.counts;
  lines.push(`forecast of ${c.total} live run(s) in ${f.durationMs} ms: ${c.continues} continue, ${c.ends} end, ${c.operator} for an operator`);
  return `${lines.join("\n")}\n`;
}

function what(r: RunForecast): string {
  switch (r.prediction) {
    case "continues":
      return r.path ?? "?";
    case "ends":
      return `${r.code ?? "?"}${r.restsIn && r.restsIn !== r.code ? ` → ${r.restsIn}` : ""} (owner ${r.owner ?? "?"}${r.canRetry ? ", Retry" : ", no Retry"})`;
    case "operator":
      return "left alone";
    default:
      return r.prediction;
  }
}
