import type { Db, Prisma } from "./db/client";

type Tx = Db | Prisma.TransactionClient;

export interface Actor {
  /** A user id or email, or `cli:<user>` / `controller:<bootId>` for non-interactive callers. */
  id: string;
  role: string;
}

export interface AuditInput {
  action: string;
  targetType: string;
  targetId?: string | null;
  companyId?: string | null;
  input?: unknown;
  outcome: "ok" | "refused" | "error";
  detail?: unknown;
}

/** Every mutation through the API writes one (DOMAIN.md §1 "Audit entry"). */
export async function writeAudit(db: Tx, actor: Actor, entry: AuditInput): Promise<void> {
  await db.auditEntry.create({
    data: {
      actor: actor.id,
      role: actor.role,
      action: entry.action,
      targetType: entry.targetType,
      targetId: entry.targetId ?? null,
      companyId: entry.companyId ?? null,
      input: (entry.input ?? undefined) as Prisma.InputJsonValue | undefined,
      outcome: entry.outcome,
      detail: (entry.detail ?? undefined) as Prisma.InputJsonValue | undefined,
    },
  });
}
