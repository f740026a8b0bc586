import type { Db, Prisma } from "../db/client";
import { storable } from "../text";
import { hideSecrets } from "./secrets";

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

/** Entries written per actor object: the tRPC layer gives each request its own actor. */
const written = new WeakMap<Actor, number>();

/** How many audit entries were written for this actor object (see writeAudit). */
export function auditsWrittenBy(actor: Actor): number {
  return written.get(actor) ?? 0;
}

/**
 * Every mutation through the API writes one (docs/rules.md §1 "Audit entry"). Whatever the
 * input holds is stored: NUL, which PostgreSQL refuses in text and JSON, is kept escaped
 * (docs/access.md, "What the API accepts"), so a refusal can never be hidden by what was refused — except a secret, which
 * is never stored whole (`hideSecrets`: a webhook URL shown redacted, a password `[redacted]`).
 */
export async function writeAudit(db: Tx, actor: Actor, entry: AuditInput): Promise<void> {
  written.set(actor, (written.get(actor) ?? 0) + 1);
  const s = (v: string) => storable(v) as string;
  await db.auditEntry.create({
    data: {
      actor: s(actor.id),
      role: s(actor.role),
      action: s(entry.action),
      targetType: s(entry.targetType),
      targetId: entry.targetId == null ? null : s(entry.targetId),
      companyId: entry.companyId == null ? null : s(entry.companyId),
      input: (storable(hideSecrets(entry.input ?? undefined)) ?? undefined) as Prisma.InputJsonValue | undefined,
      outcome: entry.outcome,
      detail: (storable(hideSecrets(entry.detail ?? undefined)) ?? undefined) as Prisma.InputJsonValue | undefined,
    },
  });
}
