import type { Command } from "commander";
import { withCliDatabase } from "../database";
import type { CliIO } from "../io";

/**
 * `runwarden user add|list|update|disable|enable|reset-password`: the same services and rules
 * as the dashboard's /users (server/auth/users.ts, server/auth/people.ts). A generated password
 * is printed once; it is stored only as a hash. Every mutation, refused ones too, is audited.
 */
const AS_FLAG = "--as <email>";
const AS_HELP = "act for this admin: only their companies may be granted, seen and changed (default: this machine's operator, every company)";

const collectCompanies = (v: string, prev: string[]) => [...prev, ...v.split(",").map((s) => s.trim()).filter(Boolean)];

export function registerUser(program: Command, io: CliIO): void {
  const user = program.command("user").description("people who can sign in");

  user
    .command("add")
    .description("add a person (a password is generated and printed once unless --password is given)")
    .argument("<email>", "their email, used to sign in")
    .requiredOption("--role <role>", "viewer, board, operator or admin")
    .option("--company <id>", "a company they see and act on (repeat it; * for all)", collectCompanies, [] as string[])
    .option("--name <name>", "their name")
    .option("--password <password>", "set this password instead of generating one (at least 10 characters)")
    .option(AS_FLAG, AS_HELP)
    .action(async (email: string, opts: { role: string; company: string[]; name?: string; password?: string; as?: string }) => {
      await withCliDatabase("user", io, async (db) => {
        const [{ addUser }, { auditedCli, cliActor }] = await Promise.all([import("../../auth/users"), import("../actor")]);
        const { actor, scope } = await cliActor(db, opts.as, "admin", "user.add");
        const input = { email, role: opts.role as "viewer", companies: opts.company, name: opts.name, password: opts.password };
        const created = await auditedCli(db, actor, "user.add", input, () => addUser(db, input, actor, scope));
        io.stdout(`added ${created.email} (${created.role}; companies ${created.companies.join(", ")})\n`);
        if (created.generatedPassword) io.stdout(`password: ${created.generatedPassword}   (shown once)\n`);
      });
    });

  user
    .command("list")
    .description("everyone who can sign in")
    .option(AS_FLAG, AS_HELP)
    .action(async (opts: { as?: string }) => {
      await withCliDatabase("user", io, async (db) => {
        const [{ peopleWhere }, { cliActor }] = await Promise.all([import("../../auth/users"), import("../actor")]);
        const { scope } = await cliActor(db, opts.as, "admin", "user.list");
        const users = await db.user.findMany({ where: peopleWhere(scope), orderBy: { createdAt: "asc" } });
        for (const u of users) io.stdout(`${u.email.padEnd(36)} ${u.role.padEnd(9)} ${u.companies.join(",")}${u.disabledAt ? "  (disabled)" : ""}\n`);
        if (users.length === 0) io.stdout("nobody yet: npm start creates a first operator on an empty database\n");
      }, { reads: true });
    });

  user
    .command("update")
    .description("change a person's role and/or companies (--company replaces their companies)")
    .argument("<email>", "the person (email or id)")
    .option("--role <role>", "viewer, board, operator or admin")
    .option("--company <id>", "a company they see and act on (repeat it; * for all)", collectCompanies, [] as string[])
    .option(AS_FLAG, AS_HELP)
    .action(async (who: string, opts: { role?: string; company: string[]; as?: string }) => {
      await withCliDatabase("user", io, async (db) => {
        const [{ updateUser }, { auditedCli, cliActor }] = await Promise.all([import("../../auth/people"), import("../actor")]);
        const { actor, scope, userId } = await cliActor(db, opts.as, "admin", "user.update");
        const input = { user: who, role: opts.role as "viewer" | undefined, companies: opts.company.length ? opts.company : undefined };
        const p = await auditedCli(db, actor, "user.update", input, () => updateUser(db, input, actor, { userId, scope }));
        io.stdout(`updated ${p.email} (${p.role}; companies ${p.companies.join(", ")})\n`);
      });
    });

  user
    .command("disable")
    .description("stop a person signing in; their sessions end at once")
    .argument("<email>", "the person (email or id)")
    .option(AS_FLAG, AS_HELP)
    .action(async (who: string, opts: { as?: string }) => {
      await withCliDatabase("user", io, async (db) => {
        const [{ disableUser }, { auditedCli, cliActor }] = await Promise.all([import("../../auth/people"), import("../actor")]);
        const { actor, scope, userId } = await cliActor(db, opts.as, "admin", "user.disable");
        const p = await auditedCli(db, actor, "user.disable", { user: who }, () => disableUser(db, { user: who }, actor, { userId, scope }));
        io.stdout(`disabled ${p.email}: they cannot sign in, and their sessions have ended\n`);
      });
    });

  user
    .command("enable")
    .description("let a disabled person sign in again")
    .argument("<email>", "the person (email or id)")
    .option(AS_FLAG, AS_HELP)
    .action(async (who: string, opts: { as?: string }) => {
      await withCliDatabase("user", io, async (db) => {
        const [{ enableUser }, { auditedCli, cliActor }] = await Promise.all([import("../../auth/people"), import("../actor")]);
        const { actor, scope, userId } = await cliActor(db, opts.as, "admin", "user.enable");
        const p = await auditedCli(db, actor, "user.enable", { user: who }, () => enableUser(db, { user: who }, actor, { userId, scope }));
        io.stdout(`enabled ${p.email}\n`);
      });
    });

  user
    .command("reset-password")
    .description("give a person a new generated password, printed once; their sessions end")
    .argument("<email>", "the person (email or id)")
    .option(AS_FLAG, AS_HELP)
    .action(async (who: string, opts: { as?: string }) => {
      await withCliDatabase("user", io, async (db) => {
        const [{ resetPassword }, { auditedCli, cliActor }] = await Promise.all([import("../../auth/people"), import("../actor")]);
        const { actor, scope, userId } = await cliActor(db, opts.as, "admin", "user.reset_password");
        const r = await auditedCli(db, actor, "user.reset_password", { user: who }, () => resetPassword(db, { user: who }, actor, { userId, scope }));
        io.stdout(`new password for ${r.email}: ${r.password}   (shown once)\n`);
      });
    });
}
