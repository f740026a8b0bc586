import { z } from "zod";
import { Prisma, readRows, RunStatus, type Db } from "../db/client";
import { databaseNow } from "../db/clock";
import {
  assertNever,
  classifyStuck,
  EXECUTING_RUN_STATUSES,
  LIVE_RUN_STATUSES,
  STUCK_REASONS,
  stuckCutoffs,
  TURN_OVERDUE_GRACE_MS,
  type StuckFinding,
  type StuckLimits,
  type StuckReason,
} from "../engine";
import { env } from "../env";
import type { CompanyScope } from "../shared/roles";
import { cursorInput, decodeCursor, pageOf } from "./cursor";
import { fromBeforeTo, runConditions, runFilterShape, type RunFilter } from "./queries";
import { allOf } from "./sql";

/**
 * Stuck runs (docs/rules.md §4, "Stuck runs"): live runs that wait on a provider outage, sit in recovery back-off,
 * have a silent executor, or are past the maximum age or turn duration. `classifyStuck` (the
 * engine) says why each run is stuck; the SQL here is the same rule in a form PostgreSQL can
 * answer from the runs' status index (only live runs are read, never every run), with the
 * engine's cutoffs as bound parameters on the database's clock. `stuck.int.test.ts` holds the
 * two to one answer.
 */

export const STUCK_FILTERS = ["any", ...STUCK_REASONS] as const;
export type StuckFilter = (typeof STUCK_FILTERS)[number];

/** The limits this dashboard judges with: the controllers' silence window and the configured maxima. */
export function stuckLimits(e: Pick<typeof env, "RUNWARDEN_EXECUTOR_TIMEOUT_MS" | "RUNWARDEN_STUCK_MAX_AGE_MS" | "RUNWARDEN_STUCK_MAX_TURN_MS"> = env): StuckLimits {
  return { silenceWindowMs: e.RUNWARDEN_EXECUTOR_TIMEOUT_MS, maxAgeMs: e.RUNWARDEN_STUCK_MAX_AGE_MS, maxTurnMs: e.RUNWARDEN_STUCK_MAX_TURN_MS };
}

export const stuckFilterInput = z.object({ ...runFilterShape, reason: z.enum(STUCK_FILTERS).default("any") }).refine(fromBeforeTo, { path: ["createdTo"], message: "must not be before createdFrom" });

export const stuckListInput = z
  .object({ ...runFilterShape, reason: z.enum(STUCK_FILTERS).default("any"), cursor: cursorInput.optional(), pageSize: z.number().int().min(5).max(100).default(25) })
  .refine(fromBeforeTo, { path: ["createdTo"], message: "must not be before createdFrom" });
export type StuckListInput = z.input<typeof stuckListInput>;

const proofLinkSchema = z.object({ id: z.string(), kind: z.string(), verdict: z.string() }).nullable();

/** One reason a run is stuck, with the proof that explains it (null: none yet; the run's timeline then). */
export const stuckFindingSchema = z.discriminatedUnion("reason", [
  z.object({ reason: z.literal("provider_wait"), since: z.date(), proof: proofLinkSchema }),
  z.object({
    reason: z.literal("recovery_backoff"),
    attempts: z.number().int(),
    maxAttempts: z.number().int(),
    nextAttemptAt: z.date(),
    lastError: z.string().nullable(),
    proof: proofLinkSchema,
  }),
  z.object({ reason: z.literal("executor_silent"), executorBootId: z.string(), lastSeenAt: z.date().nullable(), proof: proofLinkSchema }),
  z.object({ reason: z.literal("over_age"), since: z.date(), limitMs: z.number().int(), proof: proofLinkSchema }),
  z.object({ reason: z.literal("turn_overdue"), turn: z.number().int(), since: z.date(), limitMs: z.number().int(), proof: proofLinkSchema }),
]);
export type StuckFindingView = z.infer<typeof stuckFindingSchema>;

export const stuckRunSchema = z.object({
  id: z.string(),
  companyId: z.string(),
  taskId: z.string(),
  agent: z.string(),
  provider: z.string(),
  status: z.enum(RunStatus),
  phase: z.string().nullable(),
  createdAt: z.date(),
  findings: z.array(stuckFindingSchema),
});
export type StuckRun = z.infer<typeof stuckRunSchema>;

export const stuckCountsSchema = z.object(Object.fromEntries(STUCK_FILTERS.map((r) => [r, z.number().int()])) as Record<StuckFilter, z.ZodNumber>);
export type StuckCounts = z.infer<typeof stuckCountsSchema>;

export const stuckListOutput = z.object({
  items: z.array(stuckRunSchema),
  nextCursor: z.string().nullable(),
  /** Stuck runs under the same filters (every reason), over all pages. */
  counts: stuckCountsSchema,
  limits: z.object({ silenceWindowMs: z.number().int(), maxAgeMs: z.number().int(), maxTurnMs: z.number().int() }),
});
export type StuckListOutput = z.infer<typeof stuckListOutput>;

const literals = (values: readonly string[]) => Prisma.raw(values.map((s) => `'${s}'`).join(", "));
const LIVE = literals(LIVE_RUN_STATUSES);
const EXECUTING = literals(EXECUTING_RUN_STATUSES);

/** `classifyStuck`'s rule for one reason, as a condition on `runs` (cutoffs as parameters). */
function reasonSql(reason: StuckReason, now: Date, limits: StuckLimits): Prisma.Sql {
  const c = stuckCutoffs(now, limits);
  switch (reason) {
    case "provider_wait":
      return Prisma.sql`(status IN (${EXECUTING}) AND provider_wait_since IS NOT NULL)`;
    case "recovery_backoff":
      return Prisma.sql`(status IN (${EXECUTING}) AND recovery_attempts > 0 AND recovery_not_before > ${c.now}::timestamptz)`;
    case "executor_silent":
      // isSilent: no heartbeat at or after the cutoff (or no controller row at all).
      return Prisma.sql`(status IN (${EXECUTING}) AND executor_boot_id IS NOT NULL AND NOT EXISTS (
        SELECT 1 FROM controller_processes cp WHERE cp.boot_id = runs.executor_boot_id AND cp.last_seen_at >= ${c.silentBefore}::timestamptz))`;
    case "over_age":
      return Prisma.sql`(created_at < ${c.createdBefore}::timestamptz)`;
    case "turn_overdue":
      // turnLimitMs: the longer of the maximum and the run's own budget plus the grace.
      return Prisma.sql`(status = 'running' AND phase = 'session_open' AND turns_done < turns_planned AND last_runner_state_at <
        ${c.now}::timestamptz - greatest(${limits.maxTurnMs}::float8, coalesce(turn_timeout_ms, 0) + ${TURN_OVERDUE_GRACE_MS}::float8) * interval '1 millisecond')`;
    default:
      return assertNever(reason);
  }
}

function filterSql(reason: StuckFilter, now: Date, limits: StuckLimits): Prisma.Sql {
  if (reason !== "any") return reasonSql(reason, now, limits);
  return Prisma.sql`(${Prisma.join(STUCK_REASONS.map((r) => reasonSql(r, now, limits)), " OR ")})`;
}

/** Live runs only, in scope, under the list's filters: an index range on `status`, never every run. */
function baseSql(f: RunFilter, scope: CompanyScope, now: Date): Prisma.Sql[] {
  return [Prisma.sql`status IN (${LIVE})`, ...runConditions(f, scope, now)];
}

interface Row {
  id: string;
  companyId: string;
  taskId: string;
  agent: string;
  provider: string;
  status: RunStatus;
  phase: string | null;
  createdAt: Date;
  providerWaitSince: Date | null;
  recoveryAttempts: number;
  recoveryNotBefore: Date | null;
  recoveryErrors: unknown;
  executorBootId: string | null;
  executorLastSeenAt: Date | null;
  turnsDone: number;
  turnsPlanned: number;
  turnSince: Date | null;
  turnTimeoutMs: number | null;
}

const COLUMNS = Prisma.sql`id, company_id AS "companyId", task_id AS "taskId", agent, provider, status, phase, created_at AS "createdAt",
  provider_wait_since AS "providerWaitSince", recovery_attempts AS "recoveryAttempts", recovery_not_before AS "recoveryNotBefore",
  recovery_errors AS "recoveryErrors", executor_boot_id AS "executorBootId",
  (SELECT cp.last_seen_at FROM controller_processes cp WHERE cp.boot_id = runs.executor_boot_id) AS "executorLastSeenAt",
  turns_done AS "turnsDone", turns_planned AS "turnsPlanned", last_runner_state_at AS "turnSince", turn_timeout_ms AS "turnTimeoutMs"`;

/** The counting statement (exported for the EXPLAIN check in the tests). */
export function stuckCountSql(input: RunFilter, scope: CompanyScope, now: Date, limits: StuckLimits): Prisma.Sql {
  const per = STUCK_REASONS.map((r) => Prisma.sql`count(*) FILTER (WHERE ${reasonSql(r, now, limits)})::int AS ${Prisma.raw(`"${r}"`)}`);
  return Prisma.sql`SELECT count(*)::int AS "any", ${Prisma.join(per, ", ")} FROM runs WHERE ${allOf([...baseSql(input, scope, now), filterSql("any", now, limits)])}`;
}

/** The page statement (exported for the EXPLAIN check in the tests). */
export function stuckPageSql(input: z.output<typeof stuckListInput>, scope: CompanyScope, now: Date, limits: StuckLimits): Prisma.Sql {
  const k = input.cursor ? decodeCursor(input.cursor) : null;
  const after = k ? [Prisma.sql`(created_at, id) < (${k.createdAt}::timestamptz, ${k.id}::uuid)`] : [];
  return Prisma.sql`SELECT ${COLUMNS} FROM runs WHERE ${allOf([...baseSql(input, scope, now), filterSql(input.reason, now, limits), ...after])}
    ORDER BY created_at DESC, id DESC LIMIT ${input.pageSize + 1}`;
}

/** How many live runs in scope are stuck, for every reason and in all (one statement). */
export async function countStuck(db: Db, scope: CompanyScope, raw: z.input<typeof stuckFilterInput> = {}, limits = stuckLimits(), at?: Date): Promise<StuckCounts> {
  const input = stuckFilterInput.parse(raw);
  const now = at ?? (await databaseNow(db));
  const [row] = await readRows<StuckCounts>(db, stuckCountSql(input, scope, now, limits));
  return row ?? (Object.fromEntries(STUCK_FILTERS.map((r) => [r, 0])) as StuckCounts);
}

/** One page of stuck runs, newest first, each with every reason it is stuck and the proof behind it. */
export async function listStuck(db: Db, scope: CompanyScope, raw: StuckListInput, limits = stuckLimits(), at?: Date): Promise<StuckListOutput> {
  const input = stuckListInput.parse(raw);
  // The database's clock, as heartbeats and back-offs are written.
  const now = at ?? (await databaseNow(db));
  const [rows, counts] = await Promise.all([readRows<Row>(db, stuckPageSql(input, scope, now, limits)), countStuck(db, scope, input, limits, now)]);
  const page = pageOf(rows, input.pageSize);
  const proofs = await proofsOf(db, page.items.map((r) => r.id));
  return {
    items: page.items.map((r) => ({
      id: r.id,
      companyId: r.companyId,
      taskId: r.taskId,
      agent: r.agent,
      provider: r.provider,
      status: r.status,
      phase: r.phase,
      createdAt: r.createdAt,
      findings: classifyStuck(r, now, limits).map((f) => view(f, r, proofs.get(r.id) ?? [])),
    })),
    nextCursor: page.nextCursor,
    counts,
    limits,
  };
}

interface ProofRow {
  id: string;
  runId: string;
  kind: string;
  verdict: string;
  evaluatedAt: Date;
}

/** The latest proof of each (kind, verdict) that can explain a stuck run, for a page of runs. */
async function proofsOf(db: Db, runIds: string[]): Promise<Map<string, ProofRow[]>> {
  const out = new Map<string, ProofRow[]>();
  if (runIds.length === 0) return out;
  const rows = await readRows<ProofRow>(
    db,
    Prisma.sql`SELECT DISTINCT ON (run_id, kind, verdict) id, run_id AS "runId", kind, verdict, evaluated_at AS "evaluatedAt"
    FROM proofs WHERE run_id IN (${Prisma.join(runIds.map((id) => Prisma.sql`${id}::uuid`))}) AND kind IN ('recovery_attempt', 'process_exit')
    ORDER BY run_id, kind, verdict, evaluated_at DESC`,
  );
  for (const r of rows) out.set(r.runId, [...(out.get(r.runId) ?? []), r]);
  return out;
}

const latest = (proofs: ProofRow[], kind: string, verdicts?: readonly string[]) => {
  const found = proofs.filter((p) => p.kind === kind && (!verdicts || verdicts.includes(p.verdict))).sort((a, b) => b.evaluatedAt.getTime() - a.evaluatedAt.getTime())[0];
  return found ? { id: found.id, kind: found.kind, verdict: found.verdict } : null;
};

function view(f: StuckFinding, r: Row, proofs: ProofRow[]): StuckFindingView {
  switch (f.reason) {
    case "provider_wait":
      // The recovery_attempt proof that judged the error an outage (§2.8).
      return { ...f, proof: latest(proofs, "recovery_attempt", ["wait"]) };
    case "recovery_backoff": {
      const errors = Array.isArray(r.recoveryErrors) ? r.recoveryErrors.filter((e): e is string => typeof e === "string") : [];
      // The last counted attempt (try_again): the proof that set this back-off.
      return { ...f, maxAttempts: env.RUNWARDEN_RECOVERY_MAX_ATTEMPTS, lastError: errors.at(-1) ?? null, proof: latest(proofs, "recovery_attempt", ["try_again"]) };
    }
    case "executor_silent":
      // A process_exit proof exists once a controller judged the executor; before that, none.
      return { ...f, proof: latest(proofs, "process_exit") };
    case "over_age":
    case "turn_overdue":
      return { ...f, proof: null };
    default:
      return assertNever(f);
  }
}
