import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, test } from "vitest";
import { listMigrations } from "../../server/db/migrate";
import { lintMigrations, MIGRATION_LINT_BASELINE } from "./migration-lint";

/**
 * Every migration after the baseline is one an older controller survives (docs/operations.md,
 * "Upgrades and migrations"): squawk's rules for a live deploy and this project's own.
 */

const tmp: string[] = [];
afterAll(() => {
  for (const d of tmp) fs.rmSync(d, { recursive: true, force: true });
});

/** A migrations directory with one existing migration (the baseline) and `sql` after it. */
function withMigration(sql: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rw-mig-lint-"));
  tmp.push(dir);
  fs.mkdirSync(path.join(dir, MIGRATION_LINT_BASELINE));
  fs.writeFileSync(path.join(dir, MIGRATION_LINT_BASELINE, "migration.sql"), "CREATE TABLE runs (id uuid PRIMARY KEY, note text);\n");
  fs.mkdirSync(path.join(dir, "29990101000000_next"));
  fs.writeFileSync(path.join(dir, "29990101000000_next", "migration.sql"), sql);
  return dir;
}
const rules = (dir: string) => lintMigrations({ dir }).map((f) => f.rule);

describe("migrations an older controller survives", () => {
  test("the repository's migrations after the baseline have no findings (npm run db:lint)", () => {
    expect(listMigrations().some((m) => m.name === MIGRATION_LINT_BASELINE)).toBe(true);
    expect(lintMigrations()).toEqual([]);
  });

  test("a destructive migration is refused: squawk's rule and the unmarked contract step", () => {
    const dir = withMigration("SET lock_timeout = '5s';\nALTER TABLE runs DROP COLUMN note;\n");
    expect(rules(dir)).toEqual(expect.arrayContaining(["ban-drop-column", "runwarden-contract-unmarked"]));
  });

  test("the same drop marked as a contract step is allowed", () => {
    const dir = withMigration("-- contract: runs.note is read by no release since 0.4 (expanded in 29980101000000_notes)\nSET lock_timeout = '5s';\nALTER TABLE runs DROP COLUMN note;\n");
    expect(rules(dir)).toEqual([]);
  });

  test("an index built under the table's lock is refused; built concurrently, outside a transaction, it passes", () => {
    expect(rules(withMigration('CREATE INDEX "runs_note_idx" ON runs (note);\n'))).toContain("require-concurrent-index-creation");
    expect(rules(withMigration("-- runwarden:no-transaction\nSET lock_timeout = '5s';\nCREATE INDEX CONCURRENTLY \"runs_note_idx\" ON runs (note);\n"))).toEqual([]);
  });

  test("a migration outside a transaction with two statements is refused (they would share an implicit one)", () => {
    const dir = withMigration('-- runwarden:no-transaction\nCREATE INDEX CONCURRENTLY "a_idx" ON runs (note);\nCREATE INDEX CONCURRENTLY "b_idx" ON runs (id, note);\n');
    expect(rules(dir)).toContain("runwarden-no-transaction-one-statement");
  });

  test("an ALTER without a lock_timeout is refused (it would queue every read behind it)", () => {
    expect(rules(withMigration("ALTER TABLE runs ADD COLUMN seen_at timestamptz;\n"))).toContain("require-lock-timeout");
    expect(rules(withMigration("SET lock_timeout = '5s';\nALTER TABLE runs ADD COLUMN seen_at timestamptz;\n"))).toEqual([]);
  });
});
