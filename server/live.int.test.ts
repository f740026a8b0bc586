import crypto from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { readLiveToken } from "./live";
import { advanceLive, LIVE_TOPICS, type LiveState, type LiveTopic } from "./shared/live";
import { createTestDatabase, type TestDatabase } from "./test/db";
import { waitFor } from "./test/controller";

/**
 * The "changed since" token (ARCHITECTURE.md, "Live pages") against PostgreSQL: each kind of committed write it
 * covers moves its topic, a read moves nothing, and a token read while a write is still
 * uncommitted never leaves a page stale once that write commits (two connections, the
 * interleaving made by hand).
 */

let t: TestDatabase;
let writer: pg.Client;
beforeAll(async () => {
  t = await createTestDatabase(inject("adminUrl"), inject("templateDatabase"), inject("runPrefix"));
  writer = new pg.Client({ connectionString: t.url });
  await writer.connect();
  await writer.query(`INSERT INTO instances (id, name) VALUES ('inst-a', 'inst-a')`);
});
afterAll(async () => {
  await writer?.end();
  await t?.drop();
});

const sql = (text: string, params: unknown[] = []) => writer.query(text, params);

async function newRun(status = "queued"): Promise<string> {
  const id = crypto.randomUUID();
  await sql(
    `INSERT INTO runs (id, instance_id, company_id, task_id, agent, provider, target, sandbox_mode, status, updated_at)
     VALUES ($1, 'inst-a', 'co-1', $2, 'demo', 'emulator', 'local', 'warm', $3::"RunStatus", now())`,
    [id, `task-${id}`, status],
  );
  return id;
}

/** Which topics moved while `write` ran (committed by the time it returns). */
async function movedBy(write: () => Promise<unknown>): Promise<LiveTopic[]> {
  const before = await readLiveToken(t.db);
  await write();
  const after = await readLiveToken(t.db);
  return LIVE_TOPICS.filter((topic) => after.topics[topic] !== before.topics[topic]);
}

describe("live.token: what moves it", () => {
  it("each covered write moves exactly its topic", async () => {
    const runId = await newRun();
    const intentId = `op-${crypto.randomUUID()}`;
    const claimId = crypto.randomUUID();
    const waveId = `wave-${crypto.randomUUID()}`;
    const taskRow = crypto.randomUUID();
    const cases: [string, () => Promise<unknown>, LiveTopic][] = [
      ["a run submitted", () => newRun(), "runs"],
      ["a run's status changes", () => sql(`UPDATE runs SET status = 'starting' WHERE id = $1`, [runId]), "runs"],
      ["a heartbeat", () => sql(`UPDATE runs SET heartbeat_at = now() WHERE id = $1`, [runId]), "runs"],
      ["an event", () => sql(`INSERT INTO run_events (run_id, type) VALUES ($1, 'started')`, [runId]), "runs"],
      ["a claim", () => sql(`INSERT INTO recovery_claims (id, run_id, kind, controller_boot_id, restart_kind) VALUES ($1, $2, 'reattach_remote_runner', 'boot', 'hard')`, [claimId, runId]), "runs"],
      ["a proof", () => sql(`INSERT INTO proofs (id, kind, verdict, checks, evidence, output, run_id, claim_id, evaluated_by) VALUES (gen_random_uuid(), 'lease_binding', 'bind', '[]', '{}', '{}', $1, $2, 'test')`, [runId, claimId]), "runs"],
      [
        "an intent",
        () =>
          sql(
            `INSERT INTO sandbox_creation_intents (operation_id, instance_id, company_id, run_id, creation_name, labels, settle_deadline, next_attempt_at, updated_at)
             VALUES ($1, 'inst-a', 'co-1', $2, $1, '{}', now(), now(), now())`,
            [intentId, runId],
          ),
        "intents",
      ],
      ["an intent resolved", () => sql(`UPDATE sandbox_creation_intents SET status = 'resolved_absent' WHERE operation_id = $1`, [intentId]), "intents"],
      ["a lease", () => sql(`INSERT INTO environment_leases (id, run_id, instance_id, company_id, intent_id, provider, acquisition_outcome, updated_at) VALUES (gen_random_uuid(), $1, 'inst-a', 'co-1', $2, 'emulator', 'created', now())`, [runId, intentId]), "intents"],
      ["an audit entry", () => sql(`INSERT INTO audit_entries (actor, role, action, target_type, outcome) VALUES ('a@b.c', 'admin', 'sweep.run', 'sweep', 'ok')`), "audit"],
      [
        "a wave",
        () => sql(`INSERT INTO chaos_waves (id, seed, instance_id, plan, config, started_at) VALUES ($1, 1, 'inst-a', '{}', '{}', now())`, [waveId]),
        "waves",
      ],
      [
        "a wave task",
        () => sql(`INSERT INTO chaos_wave_tasks (id, wave_id, key, task_id, passed, restart_crossing, failure_codes, retries_needed, run_ids) VALUES ($1, $2, 'k', 't', true, false, '{}', 0, '{}')`, [taskRow, waveId]),
        "waves",
      ],
      ["a wave check", () => sql(`INSERT INTO chaos_wave_checks (id, wave_task_id, "check", ok, evidence) VALUES (gen_random_uuid(), $1, 'R1', true, '{}')`, [taskRow]), "waves"],
      ["a run deleted", () => sql(`DELETE FROM runs WHERE id = (SELECT id FROM runs WHERE status = 'queued' AND id <> $1 LIMIT 1)`, [runId]), "runs"],
    ];
    for (const [what, write, topic] of cases) {
      expect({ what, moved: await movedBy(write) }).toEqual({ what, moved: [topic] });
    }
  });

  it("reads, and writes that change no row, move nothing", async () => {
    const runId = await newRun();
    expect(
      await movedBy(async () => {
        await sql(`SELECT * FROM runs`);
        await t.db.run.findMany({ include: { events: true, proofs: true, leases: true } });
        await readLiveToken(t.db);
        // A controller's claim when nothing is queued for it, and a fenced write that lost.
        await sql(`UPDATE runs SET status = 'starting' WHERE status = 'queued' AND instance_id = 'inst-none'`);
        await sql(`UPDATE runs SET heartbeat_at = now() WHERE id = $1 AND executor_epoch = 99`, [runId]);
        await sql(`DELETE FROM audit_entries WHERE actor = 'nobody'`);
      }),
    ).toEqual([]);
  });
});

describe("live.token: a reading taken before a write commits", () => {
  /** One poll: read the token, apply the rule, and when it says so, fetch the page's data (the run's status). */
  async function poll(state: LiveState | null, runId: string) {
    const reading = await readLiveToken(t.db);
    const next = advanceLive(state, reading, ["runs"]);
    const fetched = next.refetch ? await statusOf(runId) : null;
    return { reading, state: next.state, refetch: next.refetch, fetched };
  }
  const statusOf = async (runId: string) => (await t.db.run.findUniqueOrThrow({ where: { id: runId }, select: { status: true } })).status;

  it("a change counted before it committed is fetched again once it has", async () => {
    const runId = await newRun();
    let state = (await poll(null, runId)).state;

    await sql("BEGIN");
    await sql(`UPDATE runs SET status = 'running' WHERE id = $1`, [runId]);
    // The reader sees the moved value, refetches, and still reads the old row.
    const during = await poll(state, runId);
    expect(during.refetch).toBe(true);
    expect(during.fetched).toBe("queued");
    state = during.state;
    await sql("COMMIT");

    // The value does not move again: by its value alone the page would stay at "queued" for ever.
    const after = await readLiveToken(t.db);
    expect(after.topics.runs).toBe(during.reading.topics.runs);
    // The rule refetches once the writer has ended (other test files' transactions may hold
    // the cluster's xmin back for a moment: poll as a page would, until it refetches).
    const settled = await waitFor("a refetch after the commit", async () => {
      const p = await poll(state, runId);
      state = p.state;
      return p.refetch ? p : null;
    });
    expect(settled.fetched).toBe("running");
    // And then it is quiet: nothing moved, nothing pending.
    expect(state.horizon).toBeNull();
    expect((await poll(state, runId)).refetch).toBe(false);
  });

  it("a page whose first reading was taken during an uncommitted write also catches up", async () => {
    const runId = await newRun();
    await sql("BEGIN");
    await sql(`UPDATE runs SET status = 'running' WHERE id = $1`, [runId]);
    // The page's server render: the token first, then its data (which cannot see the write).
    let state = (await poll(null, runId)).state;
    expect(await statusOf(runId)).toBe("queued");
    expect(state.horizon).not.toBeNull();
    await sql("COMMIT");
    const settled = await waitFor("a refetch after the commit", async () => {
      const p = await poll(state, runId);
      state = p.state;
      return p.refetch ? p : null;
    });
    expect(settled.fetched).toBe("running");
  });
});
