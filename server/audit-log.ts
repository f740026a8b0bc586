import { z } from "zod";
import type { CompanyScope } from "./auth/roles";
import type { Db, Prisma } from "./db/client";
import { AppError } from "./errors";

/** The audit log's read model: filters, a stable cursor, and exports. */

export const auditFilterInput = z.object({
  actor: z.string().trim().min(1).max(200).optional(),
  action: z.string().trim().min(1).max(100).optional(),
  outcome: z.enum(["ok", "refused", "error"]).optional(),
  targetType: z.string().trim().min(1).max(50).optional(),
  targetId: z.string().trim().min(1).max(200).optional(),
  from: z.date().optional(),
  to: z.date().optional(),
});
export type AuditFilter = z.infer<typeof auditFilterInput>;

export const auditListInput = auditFilterInput.extend({
  /** The id of the last entry of the previous page (entries go newest first). */
  cursor: z.string().regex(/^\d+$/, "expected an entry id").optional(),
  pageSize: z.number().int().min(1).max(200).default(50),
});

const entry = z.object({
  id: z.string(),
  at: z.date(),
  actor: z.string(),
  role: z.string(),
  action: z.string(),
  targetType: z.string(),
  targetId: z.string().nullable(),
  companyId: z.string().nullable(),
  input: z.unknown(),
  outcome: z.string(),
  detail: z.unknown(),
});
export type AuditRow = z.infer<typeof entry>;

export const auditListOutput = z.object({ items: z.array(entry), nextCursor: z.string().nullable() });

/** Entries about a company are seen by that company's people; the rest only by all-company ones. */
function where(scope: CompanyScope, f: AuditFilter): Prisma.AuditEntryWhereInput {
  return {
    AND: [
      scope.all ? {} : { companyId: { in: scope.companies } },
      f.actor ? { actor: { contains: f.actor, mode: "insensitive" } } : {},
      f.action ? { action: f.action } : {},
      f.outcome ? { outcome: f.outcome } : {},
      f.targetType ? { targetType: f.targetType } : {},
      f.targetId ? { targetId: f.targetId } : {},
      f.from ? { at: { gte: f.from } } : {},
      f.to ? { at: { lte: f.to } } : {},
    ],
  };
}

function toRow(e: { id: bigint; at: Date; actor: string; role: string; action: string; targetType: string; targetId: string | null; companyId: string | null; input: unknown; outcome: string; detail: unknown }): AuditRow {
  return { ...e, id: e.id.toString() };
}

export async function listAudit(db: Db, scope: CompanyScope, raw: z.input<typeof auditListInput>): Promise<z.infer<typeof auditListOutput>> {
  const input = auditListInput.parse(raw);
  if (input.from && input.to && input.from > input.to) throw new AppError("INVALID_INPUT", "from: must be before to");
  const rows = await db.auditEntry.findMany({
    where: { AND: [where(scope, input), input.cursor ? { id: { lt: BigInt(input.cursor) } } : {}] },
    orderBy: { id: "desc" },
    take: input.pageSize + 1,
  });
  const more = rows.length > input.pageSize;
  const items = rows.slice(0, input.pageSize).map(toRow);
  return { items, nextCursor: more ? (items.at(-1)?.id ?? null) : null };
}

export const AUDIT_EXPORT_LIMIT = 10_000;

/** Everything the filters match (newest first, bounded), for a CSV or JSON download. */
export async function exportAudit(db: Db, scope: CompanyScope, filter: AuditFilter): Promise<AuditRow[]> {
  const rows = await db.auditEntry.findMany({ where: where(scope, filter), orderBy: { id: "desc" }, take: AUDIT_EXPORT_LIMIT });
  return rows.map(toRow);
}

function csvCell(value: unknown): string {
  const text = value == null ? "" : value instanceof Date ? value.toISOString() : typeof value === "string" ? value : JSON.stringify(value);
  // Quote everything; a leading = + - @ is defused so a spreadsheet never runs it.
  const safe = /^[=+\-@]/.test(text) ? `'${text}` : text;
  return `"${safe.replaceAll('"', '""')}"`;
}

export function auditCsv(rows: AuditRow[]): string {
  const columns: Array<keyof AuditRow> = ["id", "at", "actor", "role", "action", "targetType", "targetId", "companyId", "outcome", "input", "detail"];
  return [columns.join(","), ...rows.map((r) => columns.map((c) => csvCell(r[c])).join(","))].join("\n") + "\n";
}
