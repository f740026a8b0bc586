import crypto from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { listMigrations } from "../db/migrate";
import { describeFailure } from "../engine";
import { listRuns } from "../runs/queries";
import { inProcessCli } from "../test/cli";
import { withTestDatabase } from "../test/context";

/**
 * `runwarden run list` and `runwarden run show` in-process against a real database: the runs
 * page's list and the run page's read through the same functions as runs.list and runs.get
 * (server/runs/queries.ts `listRuns`, server/runs/detail.ts `getRunDetail`).
 */

const t = withTestDatabase();
const cli = inProcessCli(() => t.current.db);
const CODE = "native_provider_startup_rejected";
const SENTENCE = describeFailure(CODE)!.message;

/** The seven failed runs of co-list, newest first (three share a creation time: the keyset's id tie-break). */
const listed: string[] = [];
let failed = "";
let proofId = "";

beforeAll(async () => {
  const db = t.current.db;
  await db.instance.create({ data: { id: "inst-read", name: "read" } });
  const base = { instanceId: "inst-read", agent: "a", provider: "codex", target: "remote" as const, sandboxMode: "warm" as const };
  const failedBase = { ...base, status: "failed" as const, outcome: "terminal_failure" as const, failureCode: CODE, owner: "board" as const, canRetry: true };
  const t0 = Date.parse("2026-12-01T10:00:00Z");
  const times = [0, 1, 2, 2, 2, 3, 4].map((m) => new Date(t0 + m * 60_000));
  const rows = times.map((createdAt, i) => ({ ...failedBase, id: crypto.randomUUID(), companyId: "co-list", taskId: `list-${i}`, createdAt }));
  await db.run.createMany({ data: rows });
  listed.push(...rows.sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime() || (a.id < b.id ? 1 : -1)).map((r) => r.id));
  // Not matched by the filter: another company's failed run, and co-list's succeeded one.
  await db.run.create({ data: { ...failedBase, companyId: "co-else", taskId: "else-0", createdAt: new Date(t0 + 2 * 60_000) } });
  await db.run.create({ data: { ...base, companyId: "co-list", taskId: "ok-0", status: "succeeded", createdAt: new Date(t0 + 2 * 60_000) } });

  failed = (await db.run.create({ data: { ...failedBase, companyId: "co-show", taskId: "show-0", failureDetail: "provider said 401" } })).id;
  proofId = (
    await db.proof.create({
      data: {
        runId: failed,
        kind: "recovery_route",
        verdict: "terminal_failure",
        code: CODE,
        reason: "the provider refused the session",
        checks: [
          { name: "lease_bound", ok: true },
          { name: "session_started", ok: false, expected: "started", actual: "rejected" },
        ],
        evidence: {},
        output: {},
        evaluatedBy: "boot-test",
      },
    })
  ).id;
});

/** The run ids of a text page: its table's first column, header and cursor line left out. */
const idsOf = (out: string) => out.split("\n").filter((l) => /^[0-9a-f]{8}-/.test(l)).map((l) => l.split(" ")[0]!);

describe("runwarden run list", () => {
  it("a filter and two pages: every matching run once, newest first, none of another company or status", async () => {
    const first = await cli("run", "list", "--company", "co-list", "--status", "failed", "--limit", "5");
    expect([first.code, first.err]).toEqual([0, ""]);
    expect(first.out.split("\n")[0]).toMatch(/^RUN +STATUS +COMPANY +TASK +CODE +OWNER +RETRY +CREATED$/);
    const cursor = /\nnext page: --cursor (\S+)\n$/.exec(first.out)?.[1];
    expect(cursor).toBeDefined();
    const second = await cli("run", "list", "--company", "co-list", "--status", "failed", "--limit", "5", "--cursor", cursor!);
    expect([second.code, second.err]).toEqual([0, ""]);
    expect(second.out).not.toContain("next page");
    const one = idsOf(first.out);
    const two = idsOf(second.out);
    expect(one).toHaveLength(5);
    expect(two).toHaveLength(2);
    expect([...one, ...two]).toEqual(listed);
    expect(first.out).toContain(`failed  co-list  list-6`);
    expect(first.out).toMatch(new RegExp(`${CODE} +board +yes +2026-12-01T10:04:00.000Z`));
  });

  it("--json prints listRuns' own output: items and nextCursor, the catalogue's sentence on each row", async () => {
    const r = await cli("run", "list", "--company", "co-list", "--status", "failed", "--limit", "5", "--json");
    expect([r.code, r.err]).toEqual([0, ""]);
    const page = JSON.parse(r.out) as { items: Array<Record<string, unknown>>; nextCursor: string | null };
    expect(Object.keys(page).sort()).toEqual(["items", "nextCursor"]);
    expect(page).toEqual(JSON.parse(JSON.stringify(await listRuns(t.current.db, { all: true }, { companyId: "co-list", status: "failed", pageSize: 5 }))));
    expect(page.items.map((i) => i.id)).toEqual(listed.slice(0, 5));
    expect(page.items[0]).toMatchObject({ companyId: "co-list", status: "failed", failureCode: CODE, failureMessage: SENTENCE, owner: "board", canRetry: true });
    const rest = JSON.parse((await cli("run", "list", "--company", "co-list", "--status", "failed", "--limit", "5", "--cursor", page.nextCursor!, "--json")).out) as typeof page;
    expect(rest.items.map((i) => i.id)).toEqual(listed.slice(5));
    expect(rest.nextCursor).toBeNull();
  });

  it("a bad filter, limit or cursor is exit 2 naming the option; nothing matching says so", async () => {
    expect(await cli("run", "list", "--status", "nope")).toMatchObject({ code: 2, out: "", err: expect.stringMatching(/^runwarden run list: --status: /) });
    expect(await cli("run", "list", "--limit", "1000")).toMatchObject({ code: 2, out: "", err: expect.stringMatching(/^runwarden run list: --limit: /) });
    expect(await cli("run", "list", "--cursor", "forged")).toMatchObject({ code: 2, out: "", err: expect.stringMatching(/^runwarden run list: --cursor: /) });
    expect(await cli("run", "list", "--company", "co-none")).toEqual({ code: 0, out: "no runs match\n", err: "" });
  });
});

describe("runwarden run show", () => {
  it("a failed run: status, code, owner, the catalogue's sentence, Retry offered, no successor, its proof and checks; after a Retry, the successor", async () => {
    const r = await cli("run", "show", failed);
    expect([r.code, r.err]).toEqual([0, ""]);
    const lines = r.out.split("\n");
    expect(lines[0]).toBe(`run ${failed}: failed (terminal_failure)`);
    expect(lines).toEqual(
      expect.arrayContaining([
        `failure code: ${CODE}`,
        "owner: board",
        `reason: ${SENTENCE}`,
        "detail: provider said 401",
        "retry: offered",
        "successor: none",
        "proofs: 1",
        expect.stringMatching(new RegExp(`^  proof ${proofId}: recovery_route → terminal_failure \\(${CODE}\\), evaluated \\S+ by boot-test$`)),
        "    reason: the provider refused the session",
        "    ok   lease_bound",
        '    FAIL session_started: expected "started", actual "rejected"',
      ]),
    );

    const json = JSON.parse((await cli("run", "show", failed, "--json")).out) as { run: { id: string; owner: string }; failure: { message: string }; retry: { blocker: string | null; successorId: string | null }; proofs: Array<{ id: string; checks: unknown[] }> };
    expect(json).toMatchObject({ run: { id: failed, owner: "board" }, failure: { message: SENTENCE }, retry: { blocker: null, successorId: null } });
    expect(json.proofs.map((p) => [p.id, p.checks.length])).toEqual([[proofId, 2]]);

    const successor = /^started run (\S+)\n$/.exec((await cli("run", "retry", failed)).out)?.[1];
    expect(successor).toBeDefined();
    const after = (await cli("run", "show", failed)).out.split("\n");
    expect(after).toEqual(expect.arrayContaining([`retry: already retried as ${successor} (queued)`, `successor: ${successor}`]));
  });

  it("a run Retry is not offered for says why not", async () => {
    const db = t.current.db;
    const run = await db.run.create({ data: { instanceId: "inst-read", companyId: "co-show", taskId: "show-1", agent: "a", provider: "codex", target: "remote", sandboxMode: "warm", status: "failed", outcome: "terminal_failure", failureCode: CODE, canRetry: false } });
    expect((await cli("run", "show", run.id)).out).toContain(`\nretry: not offered: ${describeFailure(CODE)!.nextAction}\n`);
  });

  it("an unknown id is exit 1 with a clear line; a malformed one exit 2", async () => {
    const unknown = "00000000-0000-4000-8000-000000000000";
    expect(await cli("run", "show", unknown)).toEqual({ code: 1, out: "", err: `runwarden run show: run ${unknown} does not exist\n` });
    expect(await cli("run", "show", "not-a-run")).toMatchObject({ code: 2, out: "", err: expect.stringMatching(/^runwarden run show: id: /) });
  });
});

// Last in this file: it leaves the file's own database a migration behind.
describe("reads on a schema behind this version (server/cli/database.ts: the CLI never migrates)", () => {
  it("run list and run show say so and read on; a Retry stops with what to run; nothing is migrated", async () => {
    const db = t.current.db;
    const newest = listMigrations().at(-1)!.name;
    await db.$executeRaw`DELETE FROM "_prisma_migrations" WHERE migration_name = ${newest}`;
    const said = `the database's schema is 1 migration(s) behind this version (first missing: ${newest}); reading it as it is\n`;
    const list = await cli("run", "list", "--company", "co-list", "--status", "failed", "--limit", "5");
    expect([list.code, list.err]).toEqual([0, `runwarden run list: ${said}`]);
    expect(idsOf(list.out)).toEqual(listed.slice(0, 5));
    const show = await cli("run", "show", failed);
    expect([show.code, show.err]).toEqual([0, `runwarden run show: ${said}`]);
    const other = await db.run.findFirstOrThrow({ where: { companyId: "co-list", status: "failed", nextRun: null } });
    expect((await cli("run", "retry", other.id)).err).toMatch(/^runwarden run: the database's schema is 1 migration\(s\) behind this version .*: run npm run db:migrate first/);
    expect(await db.run.count({ where: { previousRunId: other.id } })).toBe(0);
    expect(await db.$queryRaw<unknown[]>`SELECT 1 FROM "_prisma_migrations" WHERE migration_name = ${newest}`).toEqual([]);
  });
});
