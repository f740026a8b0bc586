import { z } from "zod";
import { ensureInstance } from "../db/installation";
import { writeAudit, type Actor } from "../audit/write";
import { Prisma, RunStatus, type Db, type Run } from "../db/client";
import { LIVE_RUN_STATUSES } from "../engine";
import { AppError } from "../errors";
import { inScope, type CompanyScope } from "../shared/roles";
import { COMMAND_CONTROL_CHARACTER, hasLoneSurrogate, text } from "../text";

/**
 * The demo agent's sleep before each turn's work, at most (a 10-turn run at 3 s lasts about
 * 30 s: long enough to kill its controller by hand, README "A restart."). A minute keeps the
 * 50-turn maximum under an hour and far inside the default turn budget.
 */
export const DEMO_SLEEP_MAX_MS = 60_000;

const nameSchema = z.string().trim().min(1).max(120).regex(/^[A-Za-z0-9][A-Za-z0-9._:-]*$/, "letters, digits, '.', '_', ':' or '-'");

export const submitRunInput = z.object({
  companyId: nameSchema,
  taskId: nameSchema,
  agent: nameSchema,
  provider: text(40),
  target: z.enum(["local", "remote"]).default("remote"),
  sandboxMode: z.enum(["per_turn", "warm"]).default("warm"),
  turns: z.number().int().min(1).max(50).default(3),
  /** A shell command each turn runs in the sandbox's work dir; none: the demo agent. */
  agentCommand: z
    .string()
    // Tab and newline belong in a script; NUL reached the database as a 500 (fuzz test).
    .refine((s) => !COMMAND_CONTROL_CHARACTER.test(s), "must not contain control characters other than tab and newline")
    .refine((s) => !hasLoneSurrogate(s), "must be valid Unicode text")
    .trim()
    .min(1, "the agent command is empty")
    .max(4000, "the agent command is over 4000 characters")
    .optional(),
  /** This run's turn budget (the runner kills the agent past it); none: the controller's RUNWARDEN_TURN_TIMEOUT_MS. */
  turnTimeoutMs: z.number().int().min(1_000, "the turn budget is under 1 s").max(24 * 60 * 60_000, "the turn budget is over 24 h").optional(),
  /** The demo agent's sleep before each turn's work (runner/demo-agent.mjs); none: no sleep. Only for the demo agent. */
  demoSleepMs: z.number().int("the demo agent's sleep is not whole milliseconds").min(0, "the demo agent's sleep is negative").max(DEMO_SLEEP_MAX_MS, `the demo agent's sleep is over ${DEMO_SLEEP_MAX_MS / 1000} s`).optional(),
  /**
   * The submitting platform's own id for this run (its task run id; docs/api.md): kept on the
   * run, sent with its run-ended events, and — without an Idempotency-Key — the key that makes
   * a resubmission return the same run.
   */
  externalId: z.string().min(1).max(200).regex(/^[\x21-\x7e]+$/, "printable ASCII without spaces").optional(),
}).superRefine((input, ctx) => {
  // The sleep is the demo agent's own (RUNWARDEN_DEMO_SLEEP_MS): a command of one's own sleeps as it likes.
  if (input.demoSleepMs !== undefined && input.agentCommand !== undefined) {
    ctx.addIssue({ code: "custom", path: ["demoSleepMs"], message: "the demo agent's sleep applies only without agentCommand (put a sleep in the command instead)" });
  }
  // A sleep past the turn's budget would end every turn as timed out (agent_turn_timeout).
  if (input.demoSleepMs !== undefined && input.turnTimeoutMs !== undefined && input.demoSleepMs >= input.turnTimeoutMs) {
    ctx.addIssue({ code: "custom", path: ["demoSleepMs"], message: "the demo agent's sleep is not under the run's turn budget (turnTimeoutMs)" });
  }
});
export type SubmitRunInput = z.input<typeof submitRunInput>;

/** A run as runs.create and runs.retry answer it. */
export const runSummarySchema = z.object({
  id: z.string(),
  companyId: z.string(),
  taskId: z.string(),
  status: z.enum(RunStatus),
  previousRunId: z.string().nullable(),
  createdAt: z.date(),
});

export const pickRunSummary = (r: z.infer<typeof runSummarySchema>) => ({
  id: r.id,
  companyId: r.companyId,
  taskId: r.taskId,
  status: r.status,
  previousRunId: r.previousRunId,
  createdAt: r.createdAt,
});

/** A new run for a task; refused while the task already has an active run. */
/** runs.create: a run for a company the person acts for, else refused and audited. */
export async function submitRunInScope(db: Db, instanceId: string, input: z.infer<typeof submitRunInput>, actor: Actor, scope: CompanyScope): Promise<Run> {
  if (!inScope(scope, input.companyId)) {
    await writeAudit(db, actor, { action: "run.submit", targetType: "task", targetId: input.taskId, companyId: input.companyId, input, outcome: "refused", detail: { reason: "company not in scope" } });
    throw new AppError("FORBIDDEN", `you cannot submit runs for company ${input.companyId}`);
  }
  return submitRun(db, instanceId, input, actor);
}

export async function submitRun(db: Db, instanceId: string, raw: SubmitRunInput, actor: Actor, options: { waveId?: string } = {}): Promise<Run> {
  const input = submitRunInput.parse(raw);
  try {
    return await db.$transaction(async (tx) => createRun(tx, instanceId, input, actor, options));
  } catch (err) {
    throw await activeRunConflict(db, err, input, actor);
  }
}

/** The run, its `created` event and its audit entry, in the caller's transaction (submitRun, and an idempotent submit: runs/submit-once.ts). */
export async function createRun(tx: Prisma.TransactionClient, instanceId: string, input: z.infer<typeof submitRunInput>, actor: Actor, options: { waveId?: string; id?: string } = {}): Promise<Run> {
  await ensureInstance(tx, instanceId);
  const run = await tx.run.create({
    data: {
      ...(options.id ? { id: options.id } : {}),
      externalId: input.externalId ?? null,
      instanceId,
      companyId: input.companyId,
      taskId: input.taskId,
      agent: input.agent,
      provider: input.provider,
      target: input.target,
      sandboxMode: input.sandboxMode,
      turnsPlanned: input.turns,
      agentCommand: input.agentCommand ?? null,
      turnTimeoutMs: input.turnTimeoutMs ?? null,
      demoSleepMs: input.demoSleepMs ?? null,
      waveId: options.waveId ?? null,
    },
  });
  await tx.runEvent.create({ data: { runId: run.id, type: "created", data: { by: actor.id } } });
  await writeAudit(tx, actor, { action: "run.submit", targetType: "run", targetId: run.id, companyId: run.companyId, input, outcome: "ok" });
  return run;
}

/** A failed create as the caller sees it: the task's active run (the one-active-run index) is a CONFLICT naming it, audited; anything else as it was. */
export async function activeRunConflict(db: Db, err: unknown, input: z.infer<typeof submitRunInput>, actor: Actor): Promise<unknown> {
  if (err instanceof Prisma.PrismaClientKnownRequestError && err.code === "P2002") {
    const active = await db.run.findFirst({
      where: { companyId: input.companyId, taskId: input.taskId, status: { in: [...LIVE_RUN_STATUSES] } },
      select: { id: true, status: true },
    });
    await writeAudit(db, actor, { action: "run.submit", targetType: "task", targetId: input.taskId, companyId: input.companyId, input, outcome: "refused", detail: { activeRun: active?.id } });
    return new AppError("CONFLICT", `task ${input.taskId} already has an active run${active ? ` (${active.id}, ${active.status})` : ""}`, { activeRunId: active?.id });
  }
  return err;
}
