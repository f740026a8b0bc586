import type { Command } from "commander";
import { withCliDatabase } from "../database";
import { CliFailure, EXIT_BAD_INPUT, type CliIO } from "../io";

type BulkPlan = import("../../runs/bulk-plan").BulkPlan;
type Kind = "retry" | "cancel";

/** The options `run retry` / `run cancel` take for a set of runs (docs/rules.md §2.11). */
export interface BulkOptions {
  failureCode?: string;
  company?: string;
  status?: string;
  dryRun?: boolean;
  plan?: string;
  confirm?: string;
  reason?: string;
  /** `run retry`'s and `run cancel`'s --as: that person's role (operator and up for a set) and companies. */
  as?: string;
  json?: boolean;
}

/** Adds the bulk options to `run retry` or `run cancel`, whose single-run form stays as it is. */
export function withBulkOptions(command: Command, kind: Kind): Command {
  const options: Array<[string, string]> = [
    ["--failure-code <code>", `a set: the runs with this failure code (with --dry-run: preview the ${kind})`],
    ["--company <id>", "a set: only this company's runs"],
    ["--status <status>", "a set: only runs in this status"],
    ["--dry-run", `preview: judge each run of the set and print the plan (its id, the confirm word, each run's admission); ${kind === "retry" ? "retries" : "cancels"} nothing`],
    ["--plan <planId>", "carry out this previewed plan (with --confirm)"],
    ["--confirm <word>", "the plan's confirm word, as the preview printed it"],
    ["--json", "print the plan as JSON"],
  ];
  // The single-run command may declare some already (`run cancel`'s --json).
  for (const [flags, description] of options) if (!command.options.some((o) => o.long === flags.split(" ")[0])) command.option(flags, description);
  return command;
}

/** True when the options name a set or a plan rather than one run. */
export function isBulk(opts: BulkOptions): boolean {
  return Boolean(opts.failureCode || opts.company || opts.status || opts.dryRun || opts.plan || opts.confirm);
}

/**
 * `run retry --failure-code CODE [--company C] --dry-run [--json]` previews a plan;
 * `run retry --plan PLAN_ID --confirm WORD [--json]` carries it out (exactly one successor
 * per admitted run, however often it is run). The same read models as the plans procedures.
 */
export async function runBulk(io: CliIO, kind: Kind, runId: string | undefined, opts: BulkOptions): Promise<void> {
  const usage = `runwarden run ${kind}: `;
  if (!runId && !isBulk(opts)) throw new CliFailure(`${usage}name a run (RUN_ID), a set (--failure-code CODE [--company C] --dry-run) or a previewed plan (--plan PLAN_ID --confirm WORD)`, EXIT_BAD_INPUT);
  if (runId) throw new CliFailure(`${usage}give a run id or a set (--failure-code/--company/--status with --dry-run) or a plan (--plan with --confirm), not both`, EXIT_BAD_INPUT);
  const previewing = !opts.plan;
  if (previewing && !opts.dryRun) throw new CliFailure(`${usage}a set is previewed first: add --dry-run, then carry the plan out with --plan PLAN_ID --confirm WORD`, EXIT_BAD_INPUT);
  if (!previewing && (opts.dryRun || opts.failureCode || opts.company || opts.status)) throw new CliFailure(`${usage}--plan carries out a previewed plan; it takes no filter and no --dry-run`, EXIT_BAD_INPUT);
  if (!previewing && !opts.confirm) throw new CliFailure(`${usage}--plan needs --confirm WORD (the preview printed it)`, EXIT_BAD_INPUT);

  await withCliDatabase("run", io, async (db, env) => {
    const [{ instanceIdOf }, { auditedCli, cliActor, machineActor }] = await Promise.all([import("../../db/installation"), import("../actor")]);
    // Without --as: the machine's operator, every company, as `run retry RUN_ID` acts.
    const { actor, scope } = opts.as === undefined ? { actor: machineActor("operator"), scope: { all: true } as const } : await cliActor(db, opts.as, "operator", `run.bulk_${kind}`);
    const instanceId = await instanceIdOf(db, env.RUNWARDEN_INSTANCE_ID);
    if (previewing) {
      const { previewBulkPlan } = await import("../../runs/bulk-preview");
      const filter = { failureCode: opts.failureCode, companyId: opts.company, status: opts.status };
      const input = { kind, filter, ...(opts.reason ? { reason: opts.reason } : {}) } as Parameters<typeof previewBulkPlan>[4];
      const plan = await auditedCli(db, actor, `run.bulk_${kind}_preview`, input, () => previewBulkPlan(db, instanceId, scope, actor, input));
      io.stdout(opts.json ? `${JSON.stringify(plan)}\n` : previewText(plan));
      return;
    }
    const { confirmBulkPlan } = await import("../../runs/bulk-confirm");
    // The controller's machinery loads only when a plan needs it (a cancel, a retried run's leases).
    let services: Promise<import("../../services").Services> | undefined;
    const servicesOnce = () => (services ??= import("../../services").then((m) => m.servicesFor(db, instanceId)));
    const input = { planId: opts.plan!, confirm: opts.confirm! };
    const cancel: import("../../runs/bulk-confirm").CancelOne = async (tx, id, options) => (await servicesOnce()).cancelRunIn(tx, scope, actor, id, options);
    // No request to answer in time: the CLI waits for the cancelled runs' teardowns to end (each bounded by the provider's timeouts).
    const { plan, leasesQueued } = await auditedCli(db, actor, `run.bulk_${kind}`, input, () => confirmBulkPlan(db, instanceId, scope, actor, input, { cancel, teardownWaitMs: Number.POSITIVE_INFINITY }));
    // Retry's one scoped cleanup attempt of the old runs' leases, as the dashboard makes it.
    const cleanup = leasesQueued.length ? await (await servicesOnce()).tearDownRetriedLeases(leasesQueued) : [];
    io.stdout(opts.json ? `${JSON.stringify({ ...plan, cleanup })}\n` : resultText(plan));
  });
}

function previewText(plan: BulkPlan): string {
  const lines = [
    `plan ${plan.id} (${plan.kind}): ${plan.total} run${plan.total === 1 ? "" : "s"}, ${plan.admitted} admitted, ${plan.total - plan.admitted} refused; expires ${plan.expiresAt.toISOString()}`,
    plan.admitted > 0 ? `carry it out: runwarden run ${plan.kind} --plan ${plan.id} --confirm "${plan.confirmWord}"` : "nothing to carry out",
    ...plan.items.map((i) => `${i.admitted ? "admitted" : "refused "}  ${i.runId}  ${i.companyId}  ${i.taskId}${i.admitted ? "" : `  ${i.reason}: ${i.refusal}`}`),
  ];
  return `${lines.join("\n")}\n`;
}

function resultText(plan: BulkPlan): string {
  const c = plan.counts;
  const done = plan.kind === "retry" ? `${c.retried} retried` : `${c.cancelled} cancelled`;
  const lines = [
    `plan ${plan.id} (${plan.kind}): ${done}, ${c.refused} refused now, ${c.failed} failed, ${c.refusedAtPreview} refused at the preview`,
    ...plan.items
      .filter((i) => i.admitted)
      .map((i) => `${(i.result ?? "pending").padEnd(9)} ${i.runId}${i.successorId ? `  → ${i.successorId}` : ""}${i.result === "refused" || i.result === "failed" ? `  ${i.resultReason}: ${i.resultDetail}` : ""}${i.teardown ? `  sandbox teardown: ${i.teardown}` : ""}`),
  ];
  return `${lines.join("\n")}\n`;
}
