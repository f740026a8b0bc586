import crypto from "node:crypto";
import { z } from "zod";
import { text } from "../text";
import { writeAudit, type Actor } from "../audit/write";
import type { ControllerContext } from "../controller/context";
import { judgeExit } from "../controller/observe";
import { describeOwnership, ownershipEvidence, ownershipRecordsOf } from "../controller/ownership";
import { recordProof } from "../controller/records";
import { teardownLease } from "../controller/teardown";
import type { Db, EnvironmentLease, RunStatus, SandboxCreationIntent } from "../db/client";
import { judgeSandboxOwnership, LIVE_RUN_STATUSES } from "../engine";
import { AppError } from "../errors";
import { asPartialIdentity } from "../intents/queries";
import { ProviderError } from "../providers/errors";
import { instanceScope, LABEL_KEYS, normaliseLabels } from "../providers/labels";
import type { SandboxView } from "../providers/types";
import { confirmWord, OWNERSHIP_VERDICTS, type OwnershipVerdict } from "./confirm";
import { inScope, type CompanyScope } from "../auth/roles";
import { FILTER_MAX } from "../limits";
import { decodeOffset, encodeOffset, offsetCursorInput } from "../runs/cursor";

/**
 * Orphaned sandboxes (DOMAIN.md §5 R4): this instance's sandboxes — listed by its instance
 * label only, never provider-wide — that no active lease of a live run holds. Each gets an
 * ownership verdict, decided from Runwarden's own records and the sandbox's labels:
 *
 * - `foreign`: its labels do not match the intent or lease that names it (the
 *   `sandbox_ownership` proof refuses), only another instance's records name it, or its
 *   company label names a company this instance has no runs, intents or leases for;
 * - `unrecorded`: this instance's labels, but no intent or lease of this instance names
 *   it — labels alone prove nothing (another installation may share the organization), so
 *   it is never in a batch reclaim; an operator may destroy it one at a time by its name;
 * - `live_creator`: a pending creation intent names it and its creator is alive, or cannot
 *   be judged from here and the intent's wait has not run out;
 * - `unknown`: no company label, a live run that names it without a lease on it, or a lease
 *   kept on purpose (`retained`) — nothing proves it may go;
 * - `reclaimable`: otherwise — the ownership proof holds (a record of this instance names
 *   it and its labels match), and no live creator or live run holds it.
 *
 * Cost accrued as an orphan: `hourlyCost` × the hours since it became one. It became one at
 * the earlier of (a) when its run finished and (b) when its last lease ended (all leases
 * ended); with neither, when its creation intent was made; with no intent either, when it
 * was created. Never earlier than its own `createdAt` (it cost nothing before it existed).
 */

const LIVE = new Set<RunStatus>(LIVE_RUN_STATUSES);
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const ORPHAN_SINCE_RULES = ["run_finished", "lease_ended", "intent_created", "created"] as const;

type RunRef = { id: string; status: RunStatus; finishedAt: Date | null };
type LeaseRef = EnvironmentLease & { run: RunRef | null };

interface SandboxRecords {
  intent: SandboxCreationIntent | null;
  leases: LeaseRef[];
  /** The run it was made for: its latest lease's, else its intent's, else its run label's. */
  run: RunRef | null;
  /** The company label names a company this instance has records for. */
  companyKnown: boolean;
}

export type Judgement =
  | { held: true; reason: string }
  | {
      held: false;
      verdict: OwnershipVerdict;
      reason: string;
      orphanSince: Date;
      orphanSinceRule: (typeof ORPHAN_SINCE_RULES)[number];
    };

const fmt = (d: Date) => d.toISOString();

/** The ownership verdict of one sandbox of this instance, from its records (no I/O but the pid probe). */
export function judgeSandbox(observer: ControllerContext, instanceId: string, sandbox: SandboxView, records: SandboxRecords, now: Date): Judgement {
  const { intent, leases, run } = records;
  const holder = leases.find((l) => l.status === "active" && l.run && LIVE.has(l.run.status));
  if (holder) return { held: true, reason: `held by lease ${holder.id} of run ${holder.run!.id} (${holder.run!.status})` };

  const since = orphanSince(sandbox, records);
  const verdict = (v: OwnershipVerdict, reason: string): Judgement => ({ held: false, verdict: v, reason, ...since });
  const labels = normaliseLabels(sandbox.labels);

  if (labels.instance !== instanceId) return verdict("foreign", `its instance label is ${labels.instance ?? "missing"}, not ${instanceId}`);
  if (!labels.company) return verdict("unknown", "it carries no company label, so nothing proves whose it is");
  // The ownership proof (§2.9): a record of this instance names exactly it, labels match.
  const named = ownershipRecordsOf(intent, leases);
  const ownership = judgeSandboxOwnership(ownershipEvidence(instanceId, sandbox, named));
  if (ownership.verdict === "refused") return verdict("foreign", `its labels do not match the records that name it: ${describeOwnership(ownership)}`);
  if (ownership.verdict === "unrecorded") {
    const otherInstance = named.find((r) => r.instanceId !== instanceId);
    if (otherInstance) return verdict("foreign", `${otherInstance.type} ${otherInstance.id} of instance ${otherInstance.instanceId} names it, and no record of ${instanceId} does`);
    if (!records.companyKnown) return verdict("foreign", `company ${labels.company} has no runs, intents or leases on instance ${instanceId}`);
    // A live run's sandbox always has an intent (written before the create): nothing proves it may go.
    if (run && LIVE.has(run.status)) return verdict("unknown", `run ${run.id} is still ${run.status}; no intent or lease of this instance names the sandbox`);
    return verdict("unrecorded", `its labels name this instance and company ${labels.company}, but no creation intent or lease of this instance names it: it can only be destroyed one at a time, by typing its name`);
  }
  if (intent?.status === "pending") {
    const { verdict: creator } = judgeExit(observer, asPartialIdentity(intent.creator));
    if (creator.verdict === "alive") {
      return verdict("live_creator", `creation intent ${intent.id} is pending and its creator is alive (${creator.reason})`);
    }
    if (creator.verdict === "unknown" && now < intent.nextAttemptAt) {
      return verdict("live_creator", `creation intent ${intent.id} is pending; its creator cannot be judged from here (${creator.reason}) and may still be waiting until ${fmt(intent.nextAttemptAt)}`);
    }
  }
  if (run && LIVE.has(run.status)) return verdict("unknown", `run ${run.id} is still ${run.status} but holds no active lease on it`);
  if (leases.some((l) => l.status === "retained")) return verdict("unknown", "a lease on it is retained (kept on purpose)");

  const why = [`${ownership.namedBy.join(" and ")} of this instance name${ownership.namedBy.length === 1 ? "s" : ""} it and its labels match`];
  if (run) why.push(`run ${run.id} is ${run.status}`);
  if (intent) why.push(`creation intent ${intent.id} is ${intent.status}${intent.status === "pending" ? " and its creator exited or its wait ran out" : ""}`);
  const inFlight = leases.find((l) => l.status === "pending_cleanup" && l.fencedUntil && l.fencedUntil > now);
  if (inFlight) why.push(`a teardown is in flight (lease ${inFlight.id}, fenced until ${fmt(inFlight.fencedUntil!)})`);
  return verdict("reclaimable", why.join("; "));
}

function orphanSince(sandbox: SandboxView, { intent, leases, run }: SandboxRecords): { orphanSince: Date; orphanSinceRule: (typeof ORPHAN_SINCE_RULES)[number] } {
  const created = new Date(sandbox.createdAt);
  const candidates: Array<{ at: Date; rule: "run_finished" | "lease_ended" }> = [];
  if (run && !LIVE.has(run.status) && run.finishedAt) candidates.push({ at: run.finishedAt, rule: "run_finished" });
  const ended = leases.map((l) => l.endedAt);
  if (ended.length && ended.every((e): e is Date => e !== null)) {
    candidates.push({ at: new Date(Math.max(...ended.map((e) => e.getTime()))), rule: "lease_ended" });
  }
  candidates.sort((a, b) => a.at.getTime() - b.at.getTime());
  const first = candidates[0];
  const pick = first ?? (intent ? { at: intent.createdAt, rule: "intent_created" as const } : { at: created, rule: "created" as const });
  return { orphanSince: pick.at > created ? pick.at : created, orphanSinceRule: pick.rule };
}

/** Reads the records behind a set of sandboxes in a few queries. */
async function loadRecords(db: Db, instanceId: string, sandboxes: SandboxView[]): Promise<Map<string, SandboxRecords>> {
  const ids = sandboxes.map((s) => s.id);
  const names = sandboxes.map((s) => s.name);
  const runSelect = { id: true, status: true, finishedAt: true } as const;
  const [leases, intents] = await Promise.all([
    ids.length
      ? db.environmentLease.findMany({ where: { OR: [{ providerLeaseId: { in: ids } }, { sandboxName: { in: names } }] }, include: { run: { select: runSelect } }, orderBy: { createdAt: "asc" } })
      : [],
    names.length ? db.sandboxCreationIntent.findMany({ where: { creationName: { in: names } } }) : [],
  ]);
  const intentByName = new Map(intents.map((i) => [i.creationName, i]));
  const labelRunIds = sandboxes.map((s) => s.labels[LABEL_KEYS.run]).filter((id): id is string => !!id && UUID.test(id));
  const intentRunIds = intents.map((i) => i.runId).filter((id) => UUID.test(id));
  const runIds = [...new Set([...labelRunIds, ...intentRunIds])];
  const runs = runIds.length ? await db.run.findMany({ where: { id: { in: runIds } }, select: runSelect }) : [];
  const runById = new Map(runs.map((r) => [r.id, r]));

  const companies = [...new Set(sandboxes.map((s) => s.labels[LABEL_KEYS.company]).filter((c): c is string => !!c))];
  // One probe per company for any record of this instance (issue 13: three GROUP BYs before).
  const known = new Set(
    companies.length
      ? (
          await db.$queryRaw<{ c: string }[]>`
            SELECT c FROM unnest(${companies}::text[]) AS c
            WHERE EXISTS (SELECT 1 FROM runs WHERE company_id = c AND instance_id = ${instanceId})
               OR EXISTS (SELECT 1 FROM sandbox_creation_intents WHERE company_id = c AND instance_id = ${instanceId})
               OR EXISTS (SELECT 1 FROM environment_leases WHERE company_id = c AND instance_id = ${instanceId})`
        ).map((r) => r.c)
      : [],
  );

  // A lease names its sandbox by id; one that never learnt the id, by its exact name.
  const byId = new Map<string, typeof leases>();
  const byName = new Map<string, typeof leases>();
  for (const l of leases) {
    const key = l.providerLeaseId ?? l.sandboxName;
    if (!key) continue;
    const map = l.providerLeaseId ? byId : byName;
    map.set(key, [...(map.get(key) ?? []), l]);
  }

  const out = new Map<string, SandboxRecords>();
  for (const s of sandboxes) {
    const mine = [...(byId.get(s.id) ?? []), ...(byName.get(s.name) ?? [])].sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime());
    const intent = intentByName.get(s.name) ?? null;
    const latestLeaseRun = [...mine].reverse().find((l) => l.run)?.run ?? null;
    const labelRun = s.labels[LABEL_KEYS.run];
    const run = latestLeaseRun ?? (intent ? runById.get(intent.runId) : undefined) ?? (labelRun ? runById.get(labelRun) : undefined) ?? null;
    const company = s.labels[LABEL_KEYS.company];
    out.set(s.id, { intent, leases: mine, run, companyKnown: !!company && known.has(company) });
  }
  return out;
}

/**
 * This instance's sandboxes, as the provider lists them by the instance label — and, for a
 * person who sees only some companies, by each of their company labels: nothing else is
 * even fetched.
 */
async function listOwnSandboxes(service: ControllerContext, scope: CompanyScope, instanceId: string, now: Date): Promise<SandboxView[]> {
  try {
    const all = scope.all
      ? await service.provider.listByLabels(instanceScope(instanceId), { now })
      : (await Promise.all(scope.companies.map((c) => service.provider.listByLabels(instanceScope(instanceId, c), { now })))).flat();
    return all.filter((s) => s.state !== "destroyed" && s.state !== "destroying");
  } catch (err) {
    if (ProviderError.is(err)) throw new AppError("PROVIDER_ERROR", `the provider could not list this instance's sandboxes: ${err.message}`);
    throw err;
  }
}

// ───────────────────────── orphans.list ─────────────────────────


export const orphanListInput = z.object({
  verdict: z.enum(OWNERSHIP_VERDICTS).optional(),
  companyId: text(FILTER_MAX.companyId).optional(),
  /** Part of a sandbox name or id. */
  search: text(FILTER_MAX.search).optional(),
  /** Where the page starts in the costliest-first order (from the previous page's `nextCursor`). */
  cursor: offsetCursorInput.optional(),
  pageSize: z.number().int().min(1).max(500).default(100),
});
export type OrphanListInput = z.input<typeof orphanListInput>;

export const orphanRow = z.object({
  id: z.string(),
  name: z.string(),
  state: z.string(),
  companyId: z.string().nullable(),
  labels: z.record(z.string(), z.string()),
  run: z.object({ id: z.string(), status: z.string() }).nullable(),
  intent: z.object({ id: z.string(), status: z.string() }).nullable(),
  leaseIds: z.array(z.string()),
  createdAt: z.date(),
  ageSeconds: z.number().int(),
  /** USD per hour. */
  hourlyCost: z.number(),
  orphanSince: z.date(),
  orphanSinceRule: z.enum(ORPHAN_SINCE_RULES),
  /** USD accrued since orphanSince. */
  accruedCost: z.number(),
  verdict: z.enum(OWNERSHIP_VERDICTS),
  reason: z.string(),
});
export type OrphanRow = z.infer<typeof orphanRow>;

export const orphanListOutput = z.object({
  instanceId: z.string(),
  listedAt: z.date(),
  /** One page of the matching orphans, the costliest first. */
  items: z.array(orphanRow),
  /** Where the page starts among all matching orphans (0-based). */
  offset: z.number().int(),
  nextCursor: z.string().nullable(),
  /** All matching orphans, not only this page. */
  totals: z.object({ count: z.number().int(), hourlyCost: z.number(), accruedCost: z.number() }),
  /** All orphans of this instance by verdict, whatever the filters. */
  byVerdict: z.record(z.enum(OWNERSHIP_VERDICTS), z.number().int()),
  /** This instance's sandboxes held by a live run (not orphans, not shown). */
  held: z.number().int(),
});
export type OrphanListOutput = z.infer<typeof orphanListOutput>;

const round6 = (n: number) => Math.round(n * 1e6) / 1e6;

function toRow(s: SandboxView, r: SandboxRecords, j: Extract<Judgement, { held: false }>, now: Date): OrphanRow {
  const hours = Math.max(0, now.getTime() - j.orphanSince.getTime()) / 3_600_000;
  return {
    id: s.id,
    name: s.name,
    state: s.state,
    companyId: s.labels[LABEL_KEYS.company] ?? null,
    labels: s.labels,
    run: r.run ? { id: r.run.id, status: r.run.status } : null,
    intent: r.intent ? { id: r.intent.id, status: r.intent.status } : null,
    leaseIds: r.leases.map((l) => l.id),
    createdAt: new Date(s.createdAt),
    ageSeconds: s.ageSeconds,
    hourlyCost: s.hourlyCost,
    orphanSince: j.orphanSince,
    orphanSinceRule: j.orphanSinceRule,
    accruedCost: round6(s.hourlyCost * hours),
    verdict: j.verdict,
    reason: j.reason,
  };
}

/** Every orphan of this instance with its verdict, the costliest first. */
async function judgeAll(db: Db, service: ControllerContext, scope: CompanyScope, instanceId: string, now: Date) {
  const sandboxes = await listOwnSandboxes(service, scope, instanceId, now);
  const records = await loadRecords(db, instanceId, sandboxes);
  let held = 0;
  const rows: OrphanRow[] = [];
  for (const s of sandboxes) {
    const r = records.get(s.id)!;
    const j = judgeSandbox(service, instanceId, s, r, now);
    if (j.held) held += 1;
    else rows.push(toRow(s, r, j, now));
  }
  rows.sort((a, b) => b.accruedCost - a.accruedCost || b.hourlyCost - a.hourlyCost || a.name.localeCompare(b.name));
  return { rows, held };
}

export async function listOrphans(db: Db, service: ControllerContext, scope: CompanyScope, instanceId: string, raw: OrphanListInput, now = new Date()): Promise<OrphanListOutput> {
  const input = orphanListInput.parse(raw);
  const page = input.cursor ? decodeOffset(input.cursor) : null;
  // A later page is judged as of its first page's moment (see OffsetCursor).
  const at = page?.at ?? now;
  const { rows, held } = await judgeAll(db, service, scope, instanceId, at);
  const byVerdict = Object.fromEntries(OWNERSHIP_VERDICTS.map((v) => [v, 0])) as Record<OwnershipVerdict, number>;
  for (const r of rows) byVerdict[r.verdict] += 1;
  const search = input.search?.toLowerCase();
  const items = rows.filter(
    (r) =>
      (!input.verdict || r.verdict === input.verdict) &&
      (!input.companyId || r.companyId === input.companyId) &&
      (!search || r.name.toLowerCase().includes(search) || r.id.toLowerCase().includes(search)),
  );
  // The provider is listed whole to judge every sandbox; only one page travels to the browser.
  const offset = Math.min(page?.offset ?? 0, items.length);
  const end = offset + input.pageSize;
  return {
    instanceId,
    listedAt: at,
    items: items.slice(offset, end),
    offset,
    nextCursor: end < items.length ? encodeOffset({ offset: end, at }) : null,
    totals: {
      count: items.length,
      hourlyCost: round6(items.reduce((n, r) => n + r.hourlyCost, 0)),
      accruedCost: round6(items.reduce((n, r) => n + r.accruedCost, 0)),
    },
    byVerdict,
    held,
  };
}

// ───────────────────────── orphans.reclaim ─────────────────────────

/** How long a dry run stays good for the real reclaim. */
export const PLAN_TTL_MS = 15 * 60_000;

const PLAN_ACTION = "orphans.reclaim_preview";
const RECLAIM_ACTION = "orphans.reclaim";

export const reclaimInput = z
  .object({
    dryRun: z.boolean(),
    sandboxIds: z
      .array(text(200))
      .min(1, "choose at least one sandbox")
      .max(100, "at most 100 sandboxes at once")
      .refine((ids) => new Set(ids).size === ids.length, "lists a sandbox twice"),
    /** The real reclaim names the dry run it carries out (its `planId`). */
    planId: z.uuid().optional(),
    /** The real reclaim needs `confirmWord(sandboxIds.length)` typed by the operator. */
    confirm: text(80).optional(),
  })
  .superRefine((v, ctx) => {
    if (v.dryRun) return;
    if (!v.planId) ctx.addIssue({ code: "custom", path: ["planId"], message: "run the dry run first and pass its planId" });
    const word = confirmWord(v.sandboxIds.length);
    if (v.confirm?.trim() !== word) {
      ctx.addIssue({ code: "custom", path: ["confirm"], message: `type "${word}" to destroy ${v.sandboxIds.length} sandbox${v.sandboxIds.length === 1 ? "" : "es"}` });
    }
  });
export type ReclaimInput = z.input<typeof reclaimInput>;

export const RECLAIM_OUTCOMES = ["would_destroy", "refused", "destroyed", "already_gone", "failed"] as const;

export const reclaimResult = z.object({
  sandboxId: z.string(),
  name: z.string().nullable(),
  companyId: z.string().nullable(),
  verdict: z.enum(OWNERSHIP_VERDICTS).nullable(),
  outcome: z.enum(RECLAIM_OUTCOMES),
  reason: z.string(),
  hourlyCost: z.number().nullable(),
  accruedCost: z.number().nullable(),
  leaseId: z.string().nullable(),
});
export type ReclaimResult = z.infer<typeof reclaimResult>;

export const reclaimOutput = z.object({
  dryRun: z.boolean(),
  planId: z.string(),
  instanceId: z.string(),
  at: z.date(),
  results: z.array(reclaimResult),
  /** Dry run: the words to type to destroy the sandboxes it would destroy. */
  confirmWord: z.string().nullable(),
  counts: z.record(z.enum(RECLAIM_OUTCOMES), z.number().int()),
});
export type ReclaimOutput = z.infer<typeof reclaimOutput>;

const planSchema = z.object({
  instanceId: z.string(),
  at: z.string(),
  destroy: z.array(z.object({ sandboxId: z.string(), name: z.string(), companyId: z.string() })),
});

function counts(results: ReclaimResult[]) {
  const c = Object.fromEntries(RECLAIM_OUTCOMES.map((o) => [o, 0])) as Record<(typeof RECLAIM_OUTCOMES)[number], number>;
  for (const r of results) c[r.outcome] += 1;
  return c;
}

const NOT_LISTED = "not among this instance's sandboxes: it is gone, or it belongs to another instance; nothing was done";

/**
 * Reclaim, dry run: what a real reclaim of these sandboxes would destroy, and what it
 * refuses and why. Touches nothing but the audit log, where the plan is kept (as the dry
 * run's audit entry) for the real reclaim to carry out.
 */
export async function previewReclaim(db: Db, service: ControllerContext, scope: CompanyScope, instanceId: string, actor: Actor, input: z.infer<typeof reclaimInput>, now = new Date()): Promise<ReclaimOutput> {
  const { rows, held } = await judgeAllWithHeld(db, service, scope, instanceId, now);
  const results: ReclaimResult[] = input.sandboxIds.map((id) => {
    const row = rows.get(id);
    if (!row) return { sandboxId: id, name: null, companyId: null, verdict: null, outcome: "refused", reason: held.get(id) ?? NOT_LISTED, hourlyCost: null, accruedCost: null, leaseId: null };
    const ok = row.verdict === "reclaimable";
    return {
      sandboxId: id,
      name: row.name,
      companyId: row.companyId,
      verdict: row.verdict,
      outcome: ok ? "would_destroy" : "refused",
      reason: ok ? row.reason : `${row.verdict.replace("_", " ")}: ${row.reason}`,
      hourlyCost: row.hourlyCost,
      accruedCost: row.accruedCost,
      leaseId: null,
    };
  });
  const planId = crypto.randomUUID();
  const destroy = results.filter((r) => r.outcome === "would_destroy").map((r) => ({ sandboxId: r.sandboxId, name: r.name!, companyId: r.companyId! }));
  const plan: z.infer<typeof planSchema> = { instanceId, at: now.toISOString(), destroy };
  await writeAudit(db, actor, {
    action: PLAN_ACTION,
    targetType: "reclaim_plan",
    targetId: planId,
    input,
    outcome: "ok",
    detail: { plan, results: results.map((r) => ({ sandboxId: r.sandboxId, outcome: r.outcome, reason: r.reason })) },
  });
  return { dryRun: true, planId, instanceId, at: now, results, confirmWord: destroy.length ? confirmWord(destroy.length) : null, counts: counts(results) };
}

async function judgeAllWithHeld(db: Db, service: ControllerContext, scope: CompanyScope, instanceId: string, now: Date) {
  const sandboxes = await listOwnSandboxes(service, scope, instanceId, now);
  const records = await loadRecords(db, instanceId, sandboxes);
  const rows = new Map<string, OrphanRow>();
  const held = new Map<string, string>();
  for (const s of sandboxes) {
    const r = records.get(s.id)!;
    const j = judgeSandbox(service, instanceId, s, r, now);
    if (j.held) held.set(s.id, `not an orphan: ${j.reason}`);
    else rows.set(s.id, toRow(s, r, j, now));
  }
  return { rows, held };
}

/**
 * Reclaim, for real: carries out a dry run. Each sandbox is looked up again by its exact
 * name, its id and labels checked, and its ownership judged again at that moment; only a
 * sandbox still `reclaimable` is destroyed, through a pending-cleanup lease and
 * `teardownLease` (claimed with a fence, labels checked once more, receipt recorded).
 */
export async function executeReclaim(db: Db, service: ControllerContext, scope: CompanyScope, instanceId: string, actor: Actor, input: z.infer<typeof reclaimInput>): Promise<ReclaimOutput> {
  const planId = input.planId!;
  const entry = await db.auditEntry.findFirst({ where: { action: PLAN_ACTION, targetType: "reclaim_plan", targetId: planId }, orderBy: { id: "desc" } });
  const parsed = planSchema.safeParse((entry?.detail as { plan?: unknown } | null)?.plan);
  const refusal =
    !entry || !parsed.success || parsed.data.instanceId !== instanceId
      ? `no dry run ${planId} for instance ${instanceId}: run the dry run first`
      : Date.now() - Date.parse(parsed.data.at) > PLAN_TTL_MS
        ? `the dry run ${planId} is older than ${PLAN_TTL_MS / 60_000} minutes: run it again`
        : null;
  if (refusal || !parsed.success) {
    const reason = refusal ?? "the dry run could not be read";
    await writeAudit(db, actor, { action: RECLAIM_ACTION, targetType: "reclaim_plan", targetId: planId, input, outcome: "refused", detail: { reason } });
    throw new AppError("PRECONDITION_FAILED", reason);
  }
  const plan = parsed.data;
  const planned = new Map(plan.destroy.map((d) => [d.sandboxId, d]));

  const results: ReclaimResult[] = [];
  for (const id of input.sandboxIds) {
    // A plan made by someone who sees more companies is carried out only within this scope.
    const p = planned.get(id);
    if (!p || !inScope(scope, p.companyId)) {
      results.push({ sandboxId: id, name: null, companyId: null, verdict: null, outcome: "refused", reason: "the dry run did not list it for destruction", hourlyCost: null, accruedCost: null, leaseId: null });
      continue;
    }
    results.push(await reclaimOne(db, service, instanceId, p));
  }
  const c = counts(results);
  await writeAudit(db, actor, {
    action: RECLAIM_ACTION,
    targetType: "reclaim_plan",
    targetId: planId,
    input,
    outcome: c.failed ? "error" : c.refused === results.length ? "refused" : "ok",
    detail: { results: results.map((r) => ({ sandboxId: r.sandboxId, name: r.name, outcome: r.outcome, reason: r.reason, leaseId: r.leaseId })) },
  });
  return { dryRun: false, planId, instanceId, at: new Date(), results, confirmWord: null, counts: c };
}

async function reclaimOne(db: Db, service: ControllerContext, instanceId: string, p: { sandboxId: string; name: string; companyId: string }): Promise<ReclaimResult> {
  const base = { sandboxId: p.sandboxId, name: p.name, companyId: p.companyId, hourlyCost: null, accruedCost: null, leaseId: null };
  const now = new Date();
  let sandbox: SandboxView | null;
  try {
    sandbox = await service.provider.getByName(p.name, { now });
  } catch (err) {
    return { ...base, verdict: null, outcome: "failed", reason: `the provider could not be asked: ${err instanceof Error ? err.message : String(err)}` };
  }
  if (!sandbox || sandbox.state === "destroyed" || sandbox.state === "destroying") {
    // Record the absence on a lease still waiting to tear it down (receipt: already_gone).
    const waiting = await db.environmentLease.findFirst({ where: { status: "pending_cleanup", providerLeaseId: p.sandboxId, sandboxName: p.name } });
    if (waiting) await teardownLease(service, waiting.id);
    return { ...base, verdict: null, outcome: "already_gone", reason: `no sandbox named ${p.name} exists any more`, leaseId: waiting?.id ?? null };
  }
  const cost = { hourlyCost: sandbox.hourlyCost, accruedCost: null };
  if (sandbox.id !== p.sandboxId) {
    return { ...base, ...cost, verdict: null, outcome: "refused", reason: `the name ${p.name} now belongs to another sandbox (${sandbox.id}); nothing was done` };
  }
  const labels = normaliseLabels(sandbox.labels);
  if (labels.instance !== instanceId || labels.company !== p.companyId) {
    return { ...base, ...cost, verdict: "foreign", outcome: "refused", reason: `its labels changed since the dry run: instance ${labels.instance ?? "none"}, company ${labels.company ?? "none"}` };
  }
  const records = (await loadRecords(db, instanceId, [sandbox])).get(sandbox.id)!;
  const j = judgeSandbox(service, instanceId, sandbox, records, now);
  if (j.held) return { ...base, ...cost, verdict: null, outcome: "refused", reason: `no longer an orphan: ${j.reason}` };
  if (j.verdict !== "reclaimable") return { ...base, ...cost, verdict: j.verdict, outcome: "refused", reason: `${j.verdict.replace("_", " ")} now: ${j.reason}` };

  const prepared = await leaseForReclaim(db, service, instanceId, sandbox, p.companyId, records, now);
  if ("refused" in prepared) return { ...base, ...cost, verdict: j.verdict, outcome: "refused", reason: prepared.refused };
  const result = await teardownLease(service, prepared.leaseId);
  const at = { ...base, ...cost, verdict: j.verdict, leaseId: prepared.leaseId };
  switch (result.outcome) {
    case "destroyed":
      return { ...at, outcome: "destroyed", reason: `destroyed through lease ${prepared.leaseId}: ${j.reason}` };
    case "already_gone":
      return { ...at, outcome: "already_gone", reason: "the provider no longer had it when the teardown ran" };
    case "refused":
      return { ...at, outcome: "refused", reason: result.reason };
    case "not_claimed":
      return { ...at, outcome: "refused", reason: "another teardown claimed it first (its fence holds); that one destroys it" };
    case "failed":
      return { ...at, outcome: "failed", reason: `the destroy failed: ${result.error}; the sweep retries it` };
  }
}

/**
 * The pending-cleanup lease the destruction goes through: one already waiting (taken over
 * unless another teardown's fence holds it), the sandbox's active leases of finished runs,
 * its pending creation intent (reclaimed under a row lock, as the sweep does), or a new one.
 */
async function leaseForReclaim(
  db: Db,
  service: ControllerContext,
  instanceId: string,
  sandbox: SandboxView,
  companyId: string,
  records: SandboxRecords,
  now: Date,
): Promise<{ leaseId: string } | { refused: string }> {
  const onThis = { OR: [{ providerLeaseId: sandbox.id }, { providerLeaseId: null, sandboxName: sandbox.name }] };
  return db.$transaction(async (tx) => {
    const waiting = await tx.environmentLease.findFirst({ where: { AND: [onThis, { status: "pending_cleanup" }] }, orderBy: { createdAt: "desc" } });
    if (waiting) {
      if (waiting.fencedUntil && waiting.fencedUntil > now) {
        return { refused: `a teardown of it is already in flight (lease ${waiting.id}, fenced until ${fmt(waiting.fencedUntil)}); it finishes on its own` };
      }
      // The operator asked now: skip a failed teardown's back-off.
      await tx.environmentLease.update({ where: { id: waiting.id }, data: { nextCleanupAt: null } });
      return { leaseId: waiting.id };
    }
    const active = await tx.environmentLease.findMany({ where: { AND: [onThis, { status: "active" }] }, include: { run: { select: { status: true } } } });
    if (active.some((l) => l.run && LIVE.has(l.run.status))) return { refused: "a live run took a lease on it since the dry run" };
    const first = active[0];
    if (first) {
      await tx.environmentLease.updateMany({ where: { id: { in: active.map((l) => l.id) }, status: "active" }, data: { status: "pending_cleanup", cleanupStatus: "reclaimed_by_operator", nextCleanupAt: null } });
      return { leaseId: first.id };
    }
    let intentId: string | null = null;
    const intent = records.intent;
    if (intent?.status === "pending") {
      const locked = await tx.$queryRaw<Array<{ operation_id: string }>>`
        SELECT operation_id FROM sandbox_creation_intents
        WHERE operation_id = ${intent.id} AND status = 'pending'::"IntentStatus"
        FOR UPDATE SKIP LOCKED`;
      if (locked.length === 0) return { refused: `a sweep is deciding creation intent ${intent.id} right now; look again in a moment` };
      const committed = await tx.environmentLease.count({ where: { intentId: intent.id } });
      if (committed === 0) intentId = intent.id;
      await tx.sandboxCreationIntent.update({
        where: { id: intent.id },
        data: {
          status: "reclaimed",
          resolvedAt: now,
          attempts: { increment: 1 },
          lastInspection: { found: true, sandboxId: sandbox.id, name: sandbox.name, labels: sandbox.labels, at: now.toISOString(), by: "operator_reclaim" },
          lastInspectedAt: now,
        },
      });
    }
    const lease = await tx.environmentLease.create({
      data: {
        runId: records.run?.id ?? null,
        instanceId,
        companyId,
        intentId,
        provider: service.providerTarget,
        providerLeaseId: sandbox.id,
        sandboxName: sandbox.name,
        acquisitionOutcome: "created",
        status: "pending_cleanup",
        cleanupStatus: "reclaimed_by_operator",
      },
    });
    return { leaseId: lease.id };
  });
}

// ───────────────────────── orphans.destroyUnrecorded ─────────────────────────

const UNRECORDED_ACTION = "orphans.destroy_unrecorded";

export const destroyUnrecordedInput = z.object({
  sandboxId: text(200),
  /** The operator types the sandbox's exact name: one sandbox, deliberately. */
  confirmName: text(200),
});
export type DestroyUnrecordedInput = z.input<typeof destroyUnrecordedInput>;

export const destroyUnrecordedOutput = z.object({
  sandboxId: z.string(),
  name: z.string(),
  outcome: z.enum(["destroyed", "already_gone", "failed"]),
  reason: z.string(),
  leaseId: z.string(),
  proofId: z.string(),
});
export type DestroyUnrecordedOutput = z.infer<typeof destroyUnrecordedOutput>;

/**
 * Destroys one `unrecorded` sandbox (§2.9): this instance's labels, no record of this
 * instance naming it. Never part of a batch: the operator names it by typing its exact
 * name; it is looked up again by that name, judged again (still unrecorded, not held, in
 * the operator's companies), the ownership proof is stored, and the destroy goes through
 * a pending-cleanup lease and `teardownLease`. Audited as `unrecorded`, refusals too.
 */
export async function destroyUnrecorded(
  db: Db,
  service: ControllerContext,
  scope: CompanyScope,
  instanceId: string,
  actor: Actor,
  input: z.infer<typeof destroyUnrecordedInput>,
): Promise<DestroyUnrecordedOutput> {
  const audit = (outcome: "ok" | "refused" | "error", detail: Record<string, unknown>, companyId: string | null = null) =>
    writeAudit(db, actor, { action: UNRECORDED_ACTION, targetType: "sandbox", targetId: input.sandboxId, companyId, input, outcome, detail: { ownership: "unrecorded", ...detail } });
  const refuse = async (code: "PRECONDITION_FAILED" | "NOT_FOUND", reason: string, companyId: string | null = null): Promise<never> => {
    await audit("refused", { reason }, companyId);
    throw new AppError(code, reason);
  };
  const now = new Date();
  let sandbox: SandboxView | null;
  try {
    sandbox = await service.provider.getByName(input.confirmName, { now });
  } catch (err) {
    if (ProviderError.is(err)) throw new AppError("PROVIDER_ERROR", `the provider could not be asked for ${input.confirmName}: ${err.message}`);
    throw err;
  }
  if (!sandbox || sandbox.state === "destroyed" || sandbox.state === "destroying") return refuse("NOT_FOUND", `no sandbox named ${input.confirmName} exists: type the sandbox's exact name`);
  if (sandbox.id !== input.sandboxId) return refuse("PRECONDITION_FAILED", `the name ${input.confirmName} belongs to sandbox ${sandbox.id}, not ${input.sandboxId}: type the exact name of the sandbox you chose`);
  const labels = normaliseLabels(sandbox.labels);
  if (labels.instance !== instanceId) return refuse("NOT_FOUND", NOT_LISTED);
  if (!labels.company || !inScope(scope, labels.company)) return refuse("NOT_FOUND", NOT_LISTED);
  const records = (await loadRecords(db, instanceId, [sandbox])).get(sandbox.id)!;
  const j = judgeSandbox(service, instanceId, sandbox, records, now);
  if (j.held) return refuse("PRECONDITION_FAILED", `not an orphan: ${j.reason}`, labels.company);
  if (j.verdict !== "unrecorded") {
    return refuse("PRECONDITION_FAILED", `it is ${j.verdict.replace("_", " ")}, not unrecorded: ${j.reason}${j.verdict === "reclaimable" ? " (reclaim it with a dry run instead)" : ""}`, labels.company);
  }

  const evidence = ownershipEvidence(instanceId, sandbox, ownershipRecordsOf(records.intent, records.leases));
  const verdict = judgeSandboxOwnership(evidence);
  const { proofId, leaseId } = await db.$transaction(async (tx) => {
    const lease = await tx.environmentLease.create({
      data: {
        runId: null,
        instanceId,
        companyId: labels.company!,
        provider: service.providerTarget,
        providerLeaseId: sandbox.id,
        sandboxName: sandbox.name,
        acquisitionOutcome: "created",
        status: "pending_cleanup",
        cleanupStatus: "unrecorded_destroyed_by_operator",
      },
    });
    const proof = await recordProof(tx, verdict, evidence, `operator:${actor.id}`, { leaseId: lease.id, sandboxId: sandbox.id });
    return { proofId: proof.id, leaseId: lease.id };
  });
  const result = await teardownLease(service, leaseId);
  const out = (outcome: DestroyUnrecordedOutput["outcome"], reason: string): DestroyUnrecordedOutput => ({ sandboxId: sandbox.id, name: sandbox.name, outcome, reason, leaseId, proofId });
  let done: DestroyUnrecordedOutput;
  switch (result.outcome) {
    case "destroyed":
      done = out("destroyed", `destroyed through lease ${leaseId}; ownership: unrecorded (${j.reason})`);
      break;
    case "already_gone":
      done = out("already_gone", "the provider no longer had it when the teardown ran");
      break;
    case "failed":
      done = out("failed", `the destroy failed: ${result.error}; the sweep retries it`);
      break;
    case "refused":
      done = out("failed", result.reason);
      break;
    case "not_claimed":
      done = out("failed", "another teardown claimed it first; that one destroys it");
      break;
  }
  await audit(done.outcome === "failed" ? "error" : "ok", { outcome: done.outcome, reason: done.reason, leaseId, proofId, name: sandbox.name }, labels.company);
  return done;
}
