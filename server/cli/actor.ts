import os from "node:os";
import { writeAudit, type Actor } from "../audit";
import { roleAllows, scopeOf, type CompanyScope, type Role } from "../auth/roles";
import type { Db } from "../db/client";
import { AppError } from "../errors";

/**
 * Who a CLI command acts as. Without `--as`, the machine's operator (`cli:<os user>`), who
 * reaches the database directly and so holds every company. With `--as EMAIL`, that person:
 * their role and companies apply exactly as on the dashboard (issue 16.1), and a person who
 * does not exist or lacks the role is refused (and audited).
 */
export async function cliActor(db: Db, as: string | undefined, needs: Role, action: string): Promise<{ actor: Actor; scope: CompanyScope }> {
  const machine: Actor = { id: `cli:${os.userInfo().username}`, role: "admin" };
  if (as === undefined) return { actor: machine, scope: { all: true } };
  const email = as.trim().toLowerCase();
  const person = await db.user.findUnique({ where: { email }, select: { email: true, role: true, companies: true } });
  const role = (person?.role ?? "none") as Role;
  const why = !person ? `no person ${email}` : !roleAllows(role, needs) ? `${email} is ${role}; ${action} needs the ${needs} role` : null;
  if (why) {
    await writeAudit(db, { id: `${machine.id} as ${email}`, role: person?.role ?? "none" }, { action, targetType: "procedure", targetId: action, outcome: "refused", detail: { reason: why } });
    throw new AppError("FORBIDDEN", why);
  }
  return { actor: { id: person!.email, role }, scope: scopeOf(person!.companies) };
}
