import { z } from "zod";
import { hideSecrets } from "./secrets";
import { writeAudit } from "./write";
import { openCursor, sealCursor } from "../runs/cursor";
import { dateInput, storable, text } from "../text";
import type { CompanyScope } from "../shared/roles";
import { sessionUser } from "../auth/users";
import type { Db, Prisma } from "../db/client";
import { AppError } from "../errors";
import { FILTER_MAX } from "../shared/limits";

/** The audit log's read model: filters, a stable cursor, and exports. */

export const auditFilterInput = z.object({
  actor: text(FILTER_MAX.actor).optional(),
  action: text(FILTER_MAX.action).optional(),
  outcome: z.enum(["ok", "refused", "error"]).optional(),
  targetType: text(FILTER_MAX.targetType).optional(),
  targetId: text(FILTER_MAX.targetId).optional(),
  from: dateInput.optional(),
  to: dateInput.optional(),
});
export type AuditFilter = z.infer<typeof auditFilterInput>;

const BIGINT_MAX = 2n ** 63n - 1n;

export const auditListInput = auditFilterInput.extend({
  /** The previous page's `nextCursor`: its last entry's id, sealed (entries go newest first). */
  cursor: z
    .string()
    .max(200)
    // An id past bigint's range reached the query as a 500 (found by the fuzz test).
    .refine((c) => /^\d{1,19}$/.test(openCursor(c) ?? "") && BigInt(openCursor(c)!) <= BIGINT_MAX, "not a cursor of this list (open the first page again)")
    .optional(),
  pageSize: z.number().int().min(1).max(200).default(50),
});

const auditEntrySchema = z.object({
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
export type AuditRow = z.infer<typeof auditEntrySchema>;

/** An entry as the page shows it: a person's email for a target that is a person's id. */
const listedEntrySchema = auditEntrySchema.extend({ targetLabel: z.string().nullable() });

export const auditListOutput = z.object({ items: z.array(listedEntrySchema), nextCursor: z.string().nullable() });

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
  // Entries stored before storable() renamed keys superjson refuses are made sendable here too,
  // and entries stored before hideSecrets() (a whole webhook URL) are shown redacted.
  return { ...e, id: e.id.toString(), input: storable(hideSecrets(e.input)), detail: storable(hideSecrets(e.detail)) };
}

export async function listAudit(db: Db, scope: CompanyScope, raw: z.input<typeof auditListInput>): Promise<z.infer<typeof auditListOutput>> {
  const input = auditListInput.parse(raw);
  if (input.from && input.to && input.from > input.to) throw new AppError("INVALID_INPUT", "from: must be before to");
  const rows = await db.auditEntry.findMany({
    where: { AND: [where(scope, input), input.cursor ? { id: { lt: BigInt(openCursor(input.cursor)!) } } : {}] },
    orderBy: { id: "desc" },
    take: input.pageSize + 1,
  });
  const more = rows.length > input.pageSize;
  const items = rows.slice(0, input.pageSize).map(toRow);
  // People are recorded by id (an email can change); the page names them by email.
  const last = items.at(-1);
  const userIds = [...new Set(items.flatMap((e) => (e.targetType === "user" && e.targetId ? [e.targetId] : [])))];
  const users = userIds.length ? await db.user.findMany({ where: { id: { in: userIds } }, select: { id: true, email: true } }) : [];
  const emailOf = new Map(users.map((u) => [u.id, u.email]));
  return {
    items: items.map((e) => ({ ...e, targetLabel: e.targetType === "user" && e.targetId ? (emailOf.get(e.targetId) ?? null) : null })),
    nextCursor: more && last ? sealCursor(last.id) : null,
  };
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

/** The query parameters of the export (`/api/audit/export`), the same names the audit page keeps in its address. */
export const AUDIT_EXPORT_PARAMS = ["format", "actor", "action", "outcome", "targetType", "targetId", "from", "to"] as const;
export type AuditExportFormat = "csv" | "json";

const ISO_DATE = /^(\d{4})-(\d{2})-(\d{2})(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$/;

/** An ISO 8601 moment, or null; a day that does not exist (2030-02-30) is not rolled over. */
function isoDate(value: string): Date | null {
  const m = ISO_DATE.exec(value);
  if (!m) return null;
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const day = new Date(Date.UTC(y, mo - 1, d));
  if (day.getUTCFullYear() !== y || day.getUTCMonth() !== mo - 1 || day.getUTCDate() !== d) return null;
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? null : date;
}

/** Reads an export's query string; a wrong value is refused with a message naming its parameter. */
export function parseAuditExportQuery(params: URLSearchParams): { ok: true; format: AuditExportFormat; filter: AuditFilter } | { ok: false; error: string } {
  const known: readonly string[] = AUDIT_EXPORT_PARAMS;
  for (const key of new Set(params.keys())) {
    if (!known.includes(key)) return { ok: false, error: `${key}: unknown parameter (expected ${AUDIT_EXPORT_PARAMS.join(", ")})` };
    if (params.getAll(key).length > 1) return { ok: false, error: `${key}: given more than once` };
  }
  const format = params.get("format") ?? "csv";
  if (format !== "csv" && format !== "json") return { ok: false, error: `format: must be csv or json, not ${JSON.stringify(format)}` };

  const raw: Record<string, unknown> = {};
  for (const key of ["actor", "action", "outcome", "targetType", "targetId"] as const) {
    const value = params.get(key);
    if (value !== null && value.trim() !== "") raw[key] = value;
  }
  for (const key of ["from", "to"] as const) {
    const value = params.get(key)?.trim();
    if (!value) continue;
    const date = isoDate(value);
    if (!date) return { ok: false, error: `${key}: not a date (expected ISO 8601, e.g. 2030-01-31T12:00:00Z), got ${JSON.stringify(value)}` };
    raw[key] = date;
  }
  const parsed = auditFilterInput.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return { ok: false, error: `${issue?.path.map(String).join(".") || "input"}: ${issue?.message ?? "invalid"}` };
  }
  if (parsed.data.from && parsed.data.to && parsed.data.from > parsed.data.to) return { ok: false, error: "from: must be before to" };
  return { ok: true, format, filter: parsed.data };
}

/** `runwarden-audit-20300131T120000Z.csv` */
export function auditExportFilename(format: AuditExportFormat, at: Date): string {
  return `runwarden-audit-${at.toISOString().replace(/\.\d+Z$/, "Z").replace(/[-:]/g, "")}.${format}`;
}

function plain(status: number, message: string): Response {
  return new Response(`${message}\n`, { status, headers: { "content-type": "text/plain; charset=utf-8", "cache-control": "no-store" } });
}

/**
 * GET /api/audit/export: everything the filters match within the signed-in person's
 * companies, as a CSV or JSON attachment. 401 without a session, 400 naming a wrong
 * parameter. The export itself is audited.
 */
export async function auditExportResponse(db: Db, request: Request, now: Date = new Date()): Promise<Response> {
  const user = await sessionUser(db, request.headers);
  if (!user) return plain(401, "sign in to export the audit log");
  const query = parseAuditExportQuery(new URL(request.url).searchParams);
  if (!query.ok) return plain(400, query.error);
  const rows = await exportAudit(db, user.scope, query.filter);
  await writeAudit(db, { id: user.email, role: user.role }, {
    action: "audit.export",
    targetType: "audit",
    input: { format: query.format, ...query.filter },
    outcome: "ok",
    detail: { rows: rows.length, truncated: rows.length >= AUDIT_EXPORT_LIMIT },
  });
  const body = query.format === "csv" ? auditCsv(rows) : `${JSON.stringify(rows, null, 2)}\n`;
  return new Response(body, {
    status: 200,
    headers: {
      "content-type": query.format === "csv" ? "text/csv; charset=utf-8" : "application/json; charset=utf-8",
      "content-disposition": `attachment; filename="${auditExportFilename(query.format, now)}"`,
      "cache-control": "no-store",
      "x-runwarden-rows": String(rows.length),
    },
  });
}
