import os from "node:os";
import { ZodError } from "zod";
import { auditsWrittenBy, writeAudit, type Actor } from "../audit/write";
import { roleAllows, scopeOf, type CompanyScope, type Role } from "../shared/roles";
import type { Db } from "../db/client";
import { APP_ERROR_TABLE, AppError } from "../errors";

/** The machine's operator: whoever runs the command on this host (`cli:<os user>`). */
export function machineActor(role: Role = "admin"): Actor {
  return { id: `cli:${os.userInfo().username}`, role };
}

/**
 * Who a CLI command acts as. Without `--as`, the machine's operator (`cli:<os user>`), who
 * reaches the database directly and so holds every company and is nobody's account
 * (`userId` null). With `--as EMAIL`, that person: their role and companies apply exactly as
 * on the dashboard (docs/access.md, "People"), and a person who does not exist, is disabled or lacks the
 * role is refused (and audited).
 */
export async function cliActor(db: Db, as: string | undefined, needs: Role, action: string): Promise<{ actor: Actor; scope: CompanyScope; userId: string | null }> {
  const machine = machineActor();
  if (as === undefined) return { actor: machine, scope: { all: true }, userId: null };
  const email = as.trim().toLowerCase();
  const person = await db.user.findUnique({ where: { email }, select: { id: true, email: true, role: true, companies: true, disabledAt: true } });
  const role = (person?.role ?? "none") as Role;
  const why = !person ? `no person ${email}` : person.disabledAt ? `${email} is disabled` : !roleAllows(role, needs) ? `${email} is ${role}; ${action} needs the ${needs} role` : null;
  if (why) {
    await writeAudit(db, { id: `${machine.id} as ${email}`, role: person?.role ?? "none" }, { action, targetType: "procedure", targetId: action, outcome: "refused", detail: { reason: why } });
    throw new AppError("FORBIDDEN", why);
  }
  return { actor: { id: person!.email, role }, scope: scopeOf(person!.companies), userId: person!.id };
}

/** Input as audited: anything that looks like a secret is left out (as tRPC's audit does). */
function redact(input: unknown): unknown {
  if (!input || typeof input !== "object") return input;
  if (Array.isArray(input)) return input.map(redact);
  return Object.fromEntries(Object.entries(input).map(([k, v]) => [k, /password|secret|token/i.test(k) ? "[redacted]" : redact(v)]));
}

/**
 * Runs one CLI mutation so that it is audited like a tRPC one: when the service wrote no
 * entry itself (its input did not fit, or it failed before auditing), one is written here —
 * `refused` for a failure a person can fix, `error` otherwise — and the failure is rethrown.
 * `actor` must be this invocation's own object (entries are counted per actor object).
 */
export async function auditedCli<T>(db: Db, actor: Actor, action: string, input: unknown, fn: () => Promise<T>): Promise<T> {
  try {
    const result = await fn();
    if (auditsWrittenBy(actor) === 0) await writeAudit(db, actor, { action, targetType: "procedure", targetId: action, input: redact(input), outcome: "ok" });
    return result;
  } catch (err) {
    if (auditsWrittenBy(actor) === 0) {
      const refused = err instanceof ZodError || (err instanceof AppError && APP_ERROR_TABLE[err.code].http < 500);
      const reason = err instanceof ZodError ? `${err.issues[0]?.path.join(".") || "input"}: ${err.issues[0]?.message ?? "invalid"}` : err instanceof AppError ? err.message : "internal error";
      await writeAudit(db, actor, { action, targetType: "procedure", targetId: action, input: redact(input), outcome: refused ? "refused" : "error", detail: { reason } }).catch(() => {});
    }
    throw err;
  }
}
