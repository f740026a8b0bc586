import type { Command } from "commander";
import { withCliDatabase } from "../database";
import type { CliIO } from "../io";

/**
 * `runwarden token create|list|revoke`: API tokens through the same functions as the dashboard's
 * /tokens (server/tokens/create.ts, list.ts, revoke.ts) and under the same rules (docs/access.md,
 * "API tokens"). A new token is printed once; only its SHA-256 is stored. Every mutation, refused
 * ones too, is audited.
 */
const AS_FLAG = "--as <email>";
const AS_HELP = "act for this admin: only their companies may be granted, seen and revoked (default: this machine's operator, every company)";
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const collectCompanies = (v: string, prev: string[]) => [...prev, ...v.split(",").map((s) => s.trim()).filter(Boolean)];
const companiesText = (companies: readonly string[]) => (companies.includes("*") ? "every company (*)" : companies.join(", "));

export function registerToken(program: Command, io: CliIO): void {
  const token = program.command("token").description("API tokens (Authorization: Bearer rw_…)");

  token
    .command("create")
    .description("make an API token and print it once (only its hash is kept)")
    .requiredOption("--name <name>", "a name for it, unique in this installation")
    .requiredOption("--role <role>", "viewer, board or operator (never admin)")
    .option("--company <id>", "a company it sees and acts on (repeat it; * for all): a subset of yours", collectCompanies, [] as string[])
    .requiredOption("--expires <lifetime>", "how long it lasts: 30d, 12h or 90m (at most RUNWARDEN_API_TOKEN_MAX_DAYS)")
    .option(AS_FLAG, AS_HELP)
    .option("--json", "print { token, summary } as JSON")
    .action(async (opts: { name: string; role: string; company: string[]; expires: string; as?: string; json?: boolean }) => {
      await withCliDatabase("token", io, async (db, env) => {
        const [{ createApiToken }, { instanceIdOf }, { auditedCli, cliActor }] = await Promise.all([import("../../tokens/create"), import("../../db/installation"), import("../actor")]);
        const { actor, scope } = await cliActor(db, opts.as, "admin", "token.create");
        const instanceId = await instanceIdOf(db, env.RUNWARDEN_INSTANCE_ID);
        const input = { name: opts.name, role: opts.role as "viewer", companies: opts.company, expiresIn: opts.expires };
        const created = await auditedCli(db, actor, "token.create", input, () => createApiToken(db, instanceId, actor, scope, input));
        if (opts.json) {
          io.stdout(`${JSON.stringify(created)}\n`);
          return;
        }
        const s = created.summary;
        io.stdout(`created token ${s.name} (${s.role}; ${companiesText(s.companies)}; prefix ${s.prefix}; expires ${s.expiresAt.toISOString()})\n`);
        io.stdout(`${created.token}\n`);
        io.stdout("shown once: only its SHA-256 is kept, so it cannot be shown again; send it as Authorization: Bearer …\n");
      });
    });

  token
    .command("list")
    .description("the API tokens you may see, newest first (never their secrets)")
    .option(AS_FLAG, AS_HELP)
    .option("--json", "print the list as JSON")
    .action(async (opts: { as?: string; json?: boolean }) => {
      await withCliDatabase(
        "token",
        io,
        async (db, env) => {
          const [{ listApiTokens }, { instanceIdOf }, { cliActor }] = await Promise.all([import("../../tokens/list"), import("../../db/installation"), import("../actor")]);
          const { scope } = await cliActor(db, opts.as, "admin", "token.list");
          const tokens = await listApiTokens(db, await instanceIdOf(db, env.RUNWARDEN_INSTANCE_ID), scope);
          if (opts.json) {
            io.stdout(`${JSON.stringify(tokens)}\n`);
            return;
          }
          for (const s of tokens) {
            const used = s.lastUsedAt ? `used ${s.lastUsedAt.toISOString()}${s.lastUsedIp ? ` from ${s.lastUsedIp}` : ""}` : "never used";
            io.stdout(`${s.id}  ${s.prefix}…  ${s.name.padEnd(24)} ${s.role.padEnd(9)} ${s.state.padEnd(8)} ${s.companies.join(",")}  by ${s.createdBy}  expires ${s.expiresAt.toISOString()}  ${used}\n`);
          }
          if (tokens.length === 0) io.stdout("no API tokens: runwarden token create makes one\n");
        },
        { reads: true },
      );
    });

  token
    .command("revoke")
    .description("revoke an API token: its next request is refused")
    .argument("<id-or-name>", "the token's id or its name")
    .option(AS_FLAG, AS_HELP)
    .action(async (ref: string, opts: { as?: string }) => {
      await withCliDatabase("token", io, async (db, env) => {
        const [{ revokeApiToken }, { instanceIdOf }, { auditedCli, cliActor }] = await Promise.all([import("../../tokens/revoke"), import("../../db/installation"), import("../actor")]);
        const { actor, scope } = await cliActor(db, opts.as, "admin", "token.revoke");
        const instanceId = await instanceIdOf(db, env.RUNWARDEN_INSTANCE_ID);
        const by = UUID.test(ref.trim()) ? { id: ref.trim() } : { name: ref };
        const r = await auditedCli(db, actor, "token.revoke", by, () => revokeApiToken(db, instanceId, actor, scope, by));
        io.stdout(r.changed ? `revoked token ${r.summary.name} (${r.summary.prefix}…): its next request is refused\n` : `token ${r.summary.name} (${r.summary.prefix}…) was already revoked\n`);
      });
    });
}
