import type { Db, Prisma } from "../db/client";
import type { Verdict } from "../engine";

type Tx = Db | Prisma.TransactionClient;

export interface RunEventInput {
  runId: string;
  type: string;
  bootId: string | null;
  data?: Record<string, unknown>;
}

const eventRow = (e: RunEventInput) => ({ runId: e.runId, type: e.type, bootId: e.bootId, data: (e.data ?? undefined) as Prisma.InputJsonValue | undefined });

/** Appends to a run's timeline. */
export async function appendEvent(db: Tx, runId: string, type: string, bootId: string | null, data?: Record<string, unknown>) {
  await db.runEvent.create({ data: eventRow({ runId, type, bootId, data }) });
}

/** Appends several events (of one run or many) in one insert. */
export async function appendEvents(db: Tx, events: readonly RunEventInput[]) {
  if (events.length > 0) await db.runEvent.createMany({ data: events.map(eventRow) });
}

export interface ProofLinks {
  runId?: string | null;
  claimId?: string | null;
  intentId?: string | null;
  leaseId?: string | null;
  sandboxId?: string | null;
}

/** One engine decision exactly as the engine returned it, with its evidence, as a proofs row. */
export function proofData(verdict: Verdict, evidence: unknown, evaluatedBy: string, links: ProofLinks = {}): Prisma.ProofCreateManyInput {
  return {
    kind: verdict.kind,
    verdict: verdict.verdict,
    code: verdict.code,
    reason: verdict.reason,
    checks: verdict.checks as unknown as Prisma.InputJsonValue,
    evidence: evidence as Prisma.InputJsonValue,
    output: verdict as unknown as Prisma.InputJsonValue,
    evaluatedBy,
    runId: links.runId ?? null,
    claimId: links.claimId ?? null,
    intentId: links.intentId ?? null,
    leaseId: links.leaseId ?? null,
    sandboxId: links.sandboxId ?? null,
  };
}

/** Stores one engine decision exactly as the engine returned it, with its evidence. */
export async function recordProof(db: Tx, verdict: Verdict, evidence: unknown, evaluatedBy: string, links: ProofLinks = {}) {
  return db.proof.create({ data: proofData(verdict, evidence, evaluatedBy, links) });
}

export function json(value: unknown): Prisma.InputJsonValue {
  return value as Prisma.InputJsonValue;
}
