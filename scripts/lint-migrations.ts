import { lintMigrations, MIGRATION_LINT_BASELINE } from "./lib/migration-lint";

/**
 * `npm run db:lint`: the migrations after the baseline against squawk's rules and this project's
 * own (scripts/lib/migration-lint.ts); exit 1 on a finding. `-- --all` reports every migration,
 * the baseline's too, and exits 0: the past is a report, not a gate.
 */
const all = process.argv.includes("--all");
const findings = lintMigrations({ since: all ? null : MIGRATION_LINT_BASELINE });
for (const f of findings) console.log(`${f.migration}/migration.sql:${f.line}  ${f.rule}  ${f.message}`);
const counts = new Map<string, number>();
for (const f of findings) counts.set(f.rule, (counts.get(f.rule) ?? 0) + 1);
console.log(
  findings.length === 0
    ? `migrations after ${MIGRATION_LINT_BASELINE}: no findings`
    : `${findings.length} finding(s)${all ? " over every migration" : ""}: ${[...counts].map(([r, n]) => `${r} ${n}`).join(", ")}`,
);
process.exitCode = !all && findings.length > 0 ? 1 : 0;
