import { execFileSync } from "node:child_process";
import path from "node:path";
import { listMigrations, splitStatements, type MigrationFile } from "../../server/db/migrate";

/**
 * Migrations an older controller survives (docs/operations.md, "Upgrades and migrations"): every
 * migration after the baseline is held to squawk's rules for a live deploy (.squawk.toml says
 * which are off, and why) and to two rules of this project's own that squawk cannot see:
 *
 * - **contract steps are marked**: a statement that removes or changes what a running older
 *   version may read or write (a dropped or renamed table, column or type, a column's type
 *   changed, a NOT NULL set) is allowed only in a migration that says so on a line
 *   `-- contract: <what no supported older version uses any more, and since which release>`
 *   (a dropped key or index too: an older version's ON CONFLICT may name it);
 *   everything else must be an expand step;
 * - **a migration outside a transaction** (`-- runwarden:no-transaction`, for CREATE INDEX
 *   CONCURRENTLY) holds one statement besides its `SET`s (a lock_timeout): the migrator runs them
 *   one by one, and a failure after the first would leave a half-applied migration.
 *
 * The migrations up to the baseline were written before the rules; `npm run db:lint -- --all`
 * reports them without failing.
 */

/** The last migration written before these rules; every later one is held to them. */
export const MIGRATION_LINT_BASELINE = "20261207133000_cancel_teardown_cost_state";

export interface MigrationFinding {
  migration: string;
  line: number;
  rule: string;
  message: string;
}

const ROOT = path.resolve(import.meta.dirname, "..", "..");
const SQUAWK = path.join(ROOT, "node_modules", "squawk-cli", "js", "bin", "squawk");

/** Statements that take something away from a running older version. */
const CONTRACT_STATEMENTS: ReadonlyArray<[RegExp, string]> = [
  [/\bDROP\s+(TABLE|COLUMN|TYPE|VIEW|FUNCTION|TRIGGER|SCHEMA)\b/i, "drops what an older version may use"],
  [/\bRENAME\b/i, "renames what an older version names"],
  [/\bALTER\s+COLUMN\s+\S+\s+(SET\s+DATA\s+)?TYPE\b/i, "changes a column's type under an older version"],
  [/\bSET\s+NOT\s+NULL\b/i, "refuses the NULLs an older version may still write"],
  [/\bDROP\s+(CONSTRAINT|INDEX)\b/i, "drops a key or index an older version's ON CONFLICT or queries may rely on"],
];
/** squawk's rules a marked contract step breaks on purpose. */
const CONTRACT_RULES = new Set(["ban-drop-column", "ban-drop-table", "renaming-column", "renaming-table", "changing-column-type", "ban-drop-not-null"]);

export function lintMigrations(options: { dir?: string; since?: string | null } = {}): MigrationFinding[] {
  const since = options.since === undefined ? MIGRATION_LINT_BASELINE : options.since;
  const dir = options.dir ?? path.join(ROOT, "prisma", "migrations");
  const held = listMigrations(dir).filter((m) => since === null || m.name > since);
  const findings: MigrationFinding[] = [];
  for (const m of held) {
    const file = path.join(dir, m.name, "migration.sql");
    const contract = /^--\s*contract:\s*\S/m.test(m.sql);
    for (const f of squawk(file, m)) {
      if (contract && CONTRACT_RULES.has(f.rule)) continue;
      findings.push({ migration: m.name, ...f });
    }
    findings.push(...ownRules(m, contract));
  }
  return findings;
}

function ownRules(m: MigrationFile, contract: boolean): MigrationFinding[] {
  const out: MigrationFinding[] = [];
  const lines = m.sql.split("\n");
  lines.forEach((text, i) => {
    const code = text.replace(/--.*$/, "");
    for (const [pattern, why] of CONTRACT_STATEMENTS) {
      if (!contract && pattern.test(code)) {
        out.push({ migration: m.name, line: i + 1, rule: "runwarden-contract-unmarked", message: `this ${why}: make it a contract step (a line "-- contract: …" saying what no supported older version uses), or expand instead` });
      }
    }
  });
  if (m.noTransaction) {
    // The migrator runs its statements one by one (server/db/migrate.ts): one that fails leaves the ones before applied.
    const statements = splitStatements(m.sql).filter((s) => !/^SET\s/i.test(s));
    if (statements.length !== 1) {
      out.push({ migration: m.name, line: 1, rule: "runwarden-no-transaction-one-statement", message: `a migration outside a transaction holds one statement besides its SETs (it holds ${statements.length}): split it` });
    }
  }
  return out;
}

function squawk(file: string, m: MigrationFile): Array<Omit<MigrationFinding, "migration">> {
  const args = [SQUAWK, "--config", path.join(ROOT, ".squawk.toml"), "--reporter", "json", ...(m.noTransaction ? ["--no-assume-in-transaction"] : []), file];
  let out: string;
  try {
    out = execFileSync(process.execPath, args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  } catch (err) {
    // squawk exits non-zero when it finds something; its findings are on stdout all the same.
    const e = err as { stdout?: string; stderr?: string; status?: number };
    if (!e.stdout) throw new Error(`squawk failed on ${file} (exit ${e.status ?? "?"}): ${e.stderr ?? String(err)}`);
    out = e.stdout;
  }
  const found = JSON.parse(out) as Array<{ line: number; rule_name: string; message: string; help?: string }>;
  return found.map((f) => ({ line: f.line, rule: f.rule_name, message: f.help ? `${f.message} (${f.help})` : f.message }));
}
