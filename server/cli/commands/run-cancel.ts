import type { Command } from "commander";
import { withCliDatabase } from "../database";
import { CliFailure, type CliIO } from "../io";
import { uuidSchema } from "../../lib/ids";
import { isBulk, runBulk, withBulkOptions, type BulkOptions } from "./bulk";

/**
 * `runwarden run cancel RUN_ID [--reason TEXT] [--as EMAIL] [--json]` (docs/rules.md §2.11): the
 * same `cancelRun` service as the run page's Cancel — the run taken over, its runner stopped,
 * its sandbox torn down, the run resting in `cancelled` with who asked and why; audited. A run
 * that already ended is refused (exit 1) and left as it was.
 */
export function registerRunCancel(run: Command, io: CliIO): void {
  const cancel = run
    .command("cancel")
    .description("cancel a run that has not ended: its sandbox is torn down; Retry stays offered (or a set: --status … --dry-run, then --plan … --confirm …)")
    .argument("[runId]", "the run")
    .option("--reason <text>", "why (kept on the run and shown on its page)")
    .option("--as <email>", "act for this person: their role (board or up) and companies apply (default: this machine's operator, every company)")
    .option("--json", "print the outcome as JSON");
  withBulkOptions(cancel, "cancel")
    .action(async (runId: string | undefined, opts: BulkOptions) => {
      if (isBulk(opts) || !runId) return runBulk(io, "cancel", runId, opts);
      await withCliDatabase("run", io, async (db, env) => {
        const [{ servicesFor, CANCEL_REASON_MAX }, { instanceIdOf }, { auditedCli, cliActor, machineActor }, { z }] = await Promise.all([
          import("../../services"),
          import("../../db/installation"),
          import("../actor"),
          import("zod"),
        ]);
        // Without --as: the machine's operator, as `run retry` acts.
        const { actor, scope } = opts.as === undefined ? { actor: machineActor("operator"), scope: { all: true } as const } : await cliActor(db, opts.as, "board", "run.cancel");
        const input = { runId, reason: opts.reason };
        const outcome = await auditedCli(db, actor, "run.cancel", input, async () => {
          // The same input contract as runs.cancel: a malformed id or an overlong reason is refused (and audited).
          const parsed = z.object({ runId: uuidSchema, reason: z.string().max(CANCEL_REASON_MAX).optional() }).parse(input);
          const services = servicesFor(db, await instanceIdOf(db, env.RUNWARDEN_INSTANCE_ID));
          return services.cancelRun(scope, actor, parsed.runId, { reason: parsed.reason });
        });
        if (opts.json) io.stdout(`${JSON.stringify(outcome)}\n`);
        if (outcome.result === "refused") throw new CliFailure(`runwarden run: ${outcome.refusal}`, 1);
        if (!opts.json) {
          io.stdout(`cancelled run ${outcome.runId}\n`);
          for (const l of outcome.leases) io.stdout(`  sandbox lease ${l.leaseId}: ${l.outcome}\n`);
        }
      });
    });
}
