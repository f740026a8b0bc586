import crypto from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { inProcessCli } from "../test/cli";
import { withTestDatabase } from "../test/context";

/** `runwarden run retry --failure-code … --dry-run` then `--plan … --confirm …`, in-process against a real database. */

const t = withTestDatabase();
const CODE = "native_provider_startup_rejected";

const cli = inProcessCli(() => t.current.db);

const ids: string[] = [];
beforeAll(async () => {
  const db = t.current.db;
  await db.instance.create({ data: { id: "inst-cli", name: "cli" } });
  const base = { instanceId: "inst-cli", agent: "a", provider: "codex", target: "remote" as const, sandboxMode: "warm" as const, status: "failed" as const, outcome: "terminal_failure" as const };
  for (let i = 0; i < 3; i++) ids.push((await db.run.create({ data: { ...base, id: crypto.randomUUID(), companyId: "co-cli", taskId: `cli-${i}`, failureCode: CODE, canRetry: true } })).id);
  // Not offered Retry: refused at the preview, never retried.
  ids.push((await db.run.create({ data: { ...base, id: crypto.randomUUID(), companyId: "co-cli", taskId: "cli-no", failureCode: CODE, canRetry: false } })).id);
  await db.run.create({ data: { ...base, companyId: "co-other", taskId: "cli-other", failureCode: CODE, canRetry: true } });
});

describe("runwarden run retry (bulk)", () => {
  it("--dry-run --json prints the plan; --plan --confirm --json carries it out; again, the same results and no second run", async () => {
    const dry = await cli("run", "retry", "--failure-code", CODE, "--company", "co-cli", "--dry-run", "--json");
    expect([dry.code, dry.err]).toEqual([0, ""]);
    const plan = JSON.parse(dry.out) as { id: string; confirmWord: string; total: number; admitted: number; items: Array<{ runId: string; admitted: boolean; reason: string | null }> };
    expect(plan).toMatchObject({ total: 4, admitted: 3, confirmWord: "retry 3" });
    expect(plan.items.find((i) => !i.admitted)).toMatchObject({ runId: ids[3], reason: "retry_not_offered" });
    expect(await t.current.db.run.count({ where: { previousRunId: { in: ids } } })).toBe(0);

    const wrong = await cli("run", "retry", "--plan", plan.id, "--confirm", "retry 4");
    expect([wrong.code, wrong.out, wrong.err]).toEqual([2, "", 'runwarden run: Type "retry 3" to retry the runs this plan admitted.\n']);

    const done = await cli("run", "retry", "--plan", plan.id, "--confirm", "retry 3", "--json");
    expect([done.code, done.err]).toEqual([0, ""]);
    const result = JSON.parse(done.out) as { counts: Record<string, number>; items: Array<{ runId: string; result: string | null; successorId: string | null }> };
    expect(result.counts).toMatchObject({ retried: 3, refusedAtPreview: 1, pending: 0 });
    expect(await t.current.db.run.count({ where: { previousRunId: { in: ids } } })).toBe(3);

    const again = await cli("run", "retry", "--plan", plan.id, "--confirm", "retry 3");
    expect(again.code).toBe(0);
    expect(again.out).toMatch(/^plan \S+ \(retry\): 3 retried, 0 refused now, 0 failed, 1 refused at the preview\n/);
    for (const i of result.items.filter((x) => x.result === "retried")) expect(again.out).toContain(`${i.runId}  → ${i.successorId}`);
    expect(await t.current.db.run.count({ where: { previousRunId: { in: ids } } })).toBe(3);
    expect(await t.current.db.auditEntry.count({ where: { action: "run.bulk_retry", targetId: plan.id, outcome: "ok" } })).toBe(1);
  });

  it("the text preview names the plan, the command that carries it out and each refusal", async () => {
    const dry = await cli("run", "retry", "--failure-code", CODE, "--company", "co-other", "--dry-run");
    expect(dry.code).toBe(0);
    expect(dry.out).toMatch(/^plan (\S+) \(retry\): 1 run, 1 admitted, 0 refused; expires \S+\ncarry it out: runwarden run retry --plan \1 --confirm "retry 1"\nadmitted {2}\S+ {2}co-other {2}cli-other\n$/);
  });

  it("usage mistakes exit 2 with one line: no filter, a set without --dry-run, --plan without --confirm, a run id and a set", async () => {
    expect(await cli("run", "retry")).toMatchObject({ code: 2, out: "" });
    expect((await cli("run", "retry", "--dry-run")).err).toMatch(/^runwarden run: filter: name the runs with at least one filter/);
    expect((await cli("run", "retry", "--failure-code", CODE)).err).toMatch(/add --dry-run/);
    expect((await cli("run", "retry", "--plan", crypto.randomUUID())).err).toMatch(/needs --confirm/);
    expect((await cli("run", "retry", ids[0]!, "--dry-run", "--failure-code", CODE)).err).toMatch(/not both/);
    expect((await cli("run", "retry", "--plan", crypto.randomUUID(), "--confirm", "retry 1")).err).toMatch(/^runwarden run: no bulk plan/);
  });
});

describe("runwarden run cancel (bulk)", () => {
  it("--status queued --dry-run --json, then --plan --confirm: the queued runs cancelled with the reason, the ended ones left", async () => {
    const db = t.current.db;
    const base = { instanceId: "inst-cli", companyId: "co-cli-cancel", agent: "a", provider: "codex", target: "remote" as const, sandboxMode: "warm" as const };
    const queued = [crypto.randomUUID(), crypto.randomUUID()];
    await db.run.createMany({ data: queued.map((id, i) => ({ ...base, id, taskId: `cli-cancel-${i}`, status: "queued" as const })) });
    const dry = await cli("run", "cancel", "--company", "co-cli-cancel", "--status", "queued", "--reason", "wrong prompt", "--dry-run", "--json");
    expect([dry.code, dry.err]).toEqual([0, ""]);
    const plan = JSON.parse(dry.out) as { id: string; confirmWord: string; admitted: number };
    expect(plan).toMatchObject({ admitted: 2, confirmWord: "cancel 2" });
    const done = await cli("run", "cancel", "--plan", plan.id, "--confirm", "cancel 2");
    expect([done.code, done.err]).toEqual([0, ""]);
    expect(done.out).toMatch(/^plan \S+ \(cancel\): 2 cancelled, 0 refused now, 0 failed, 0 refused at the preview\n/);
    const runs = await db.run.findMany({ where: { id: { in: queued } } });
    expect(runs.map((r) => [r.status, r.cancelReason])).toEqual([
      ["cancelled", "wrong prompt"],
      ["cancelled", "wrong prompt"],
    ]);
  });
});
