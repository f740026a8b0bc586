import os from "node:os";
import type { Command } from "commander";
import { withCliDatabase } from "../database";
import type { CliIO } from "../io";

/**
 * `runwarden user add EMAIL --role ROLE --company ID [--company ID…]` and `user list`.
 * A generated password is printed once; it is stored only as a hash.
 */
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
    .action(async (email: string, opts: { role: string; company: string[]; name?: string; password?: string }) => {
      await withCliDatabase("user", async (db) => {
        const { addUser } = await import("../../auth/users");
        const created = await addUser(
          db,
          { email, role: opts.role as "viewer", companies: opts.company, name: opts.name, password: opts.password },
          { id: `cli:${os.userInfo().username}`, role: "admin" },
        );
        io.stdout(`added ${created.email} (${created.role}; companies ${created.companies.join(", ")})\n`);
        if (created.generatedPassword) io.stdout(`password: ${created.generatedPassword}   (shown once)\n`);
      });
    });

  user
    .command("list")
    .description("everyone who can sign in")
    .action(async () => {
      await withCliDatabase("user", async (db) => {
        const users = await db.user.findMany({ orderBy: { createdAt: "asc" } });
        for (const u of users) io.stdout(`${u.email.padEnd(36)} ${u.role.padEnd(9)} ${u.companies.join(",")}\n`);
        if (users.length === 0) io.stdout("nobody yet: npm start creates a first operator on an empty database\n");
      });
    });
}
