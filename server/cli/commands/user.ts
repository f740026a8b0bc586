import type { Command } from "commander";
import { withCliDatabase } from "../database";
import type { CliIO } from "../io";

/**
 * `runwarden user add EMAIL --role ROLE --company ID [--company ID…]` and `user list`.
 * A generated password is printed once; it is stored only as a hash.
 */
const AS_FLAG = "--as <email>";
const AS_HELP = "act for this admin: only their companies may be granted and seen (default: this machine's operator, every company)";

export function registerUser(program: Command, io: CliIO): void {
  const user = program.command("user").description("people who can sign in");

  user
    .command("add")
    .description("add a person (a password is generated and printed once unless --password is given)")
    .argument("<email>", "their email, used to sign in")
    .requiredOption("--role <role>", "viewer, board, operator or admin")
    .option("--company <id>", "a company they see and act on (repeat it; * for all)", (v: string, prev: string[]) => [...prev, ...v.split(",").map((s) => s.trim()).filter(Boolean)], [] as string[])
    .option("--name <name>", "their name")
    .option("--password <password>", "set this password instead of generating one (at least 10 characters)")
    .option(AS_FLAG, AS_HELP)
    .action(async (email: string, opts: { role: string; company: string[]; name?: string; password?: string; as?: string }) => {
      await withCliDatabase("user", async (db) => {
        const [{ addUser }, { cliActor }] = await Promise.all([import("../../auth/users"), import("../actor")]);
        const { actor, scope } = await cliActor(db, opts.as, "admin", "user.add");
        const created = await addUser(db, { email, role: opts.role as "viewer", companies: opts.company, name: opts.name, password: opts.password }, actor, scope);
        io.stdout(`added ${created.email} (${created.role}; companies ${created.companies.join(", ")})\n`);
        if (created.generatedPassword) io.stdout(`password: ${created.generatedPassword}   (shown once)\n`);
      });
    });

  user
    .command("list")
    .description("everyone who can sign in")
    .option(AS_FLAG, AS_HELP)
    .action(async (opts: { as?: string }) => {
      await withCliDatabase("user", async (db) => {
        const [{ peopleWhere }, { cliActor }] = await Promise.all([import("../../auth/users"), import("../actor")]);
        const { scope } = await cliActor(db, opts.as, "admin", "user.list");
        const users = await db.user.findMany({ where: peopleWhere(scope), orderBy: { createdAt: "asc" } });
        for (const u of users) io.stdout(`${u.email.padEnd(36)} ${u.role.padEnd(9)} ${u.companies.join(",")}\n`);
        if (users.length === 0) io.stdout("nobody yet: npm start creates a first operator on an empty database\n");
      });
    });
}
