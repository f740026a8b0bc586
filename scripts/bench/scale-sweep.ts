/**
 * The sweep figures of `npm run bench -- --scale N` (docs/decisions/0003-cost-at-scale.md), on the generated database of
 * each size: a creation-intent pass over the pending backlog of a live creator (the rows it
 * judges and leaves) against a raw keyset scan of the same rows, and reclaims/s of abandoned
 * intents against the provider's own round trips for the same sandboxes, with an emulator of
 * this run. Runs last for a size: it changes the backlog.
 */
import pg from "pg";
import { evidenceIdentity } from "../../server/controller/context";
import { reclaimBatching, sweepCreationIntents } from "../../server/controller/sweeps";
import { createDb } from "../../server/db/client";
import { DEFAULT_TRANSITION_MS } from "../../server/emulator/context";
import { EmulatorAdminClient } from "../../server/emulator/admin-client";
import { env } from "../../server/env";
import { exitedProcessIdentity } from "../../server/process/exited";
import { abandonIntents, benchController, emulatorProcess, reclaimFloor } from "./emulator";
import { compare, unitFigure, type Figure } from "./measure";
import { OUR_INSTANCE } from "./scale-data";

const RECLAIMS = 2_000; // as many as the default bench's section 2b
const FLOOR_N = 400; // as the default bench's
const WARMUP_RECLAIMS = 300;

export async function sweepFigures(url: string, raw: pg.Pool, emulatorDbUrl: string, size: number): Promise<Figure[]> {
  // Sized as main.ts sizes a controller's pool (the lanes, their teardowns, the pager).
  const db = createDb(url, { max: env.RUNWARDEN_SWEEP_LANES + 8 });
  // In its own process, as npm start and the default bench run it.
  const emulator = await emulatorProcess(emulatorDbUrl, DEFAULT_TRANSITION_MS);
  const admin = new EmulatorAdminClient(emulator.url, "emulator-key");
  const out: Figure[] = [];
  const { controller, provider, identity } = await benchController(db, emulator.url, OUR_INSTANCE);
  try {
    const { pageSize, sweepLanes } = controller.ctx.config;

    // The generated backlog names a creator of another PID space; make it this live process,
    // so every row is judged `wait` on a probe that says alive (the "creators alive").
    const me = evidenceIdentity(identity);
    const backlog = (
      await raw.query(`UPDATE sandbox_creation_intents SET creator = $1::jsonb, creator_boot_id = $2 WHERE instance_id = $3 AND status = 'pending'`, [
        JSON.stringify(me),
        me.bootId,
        OUR_INSTANCE,
      ])
    ).rowCount ?? 0;
    await raw.query("VACUUM ANALYZE sandbox_creation_intents");
    const scan = async () => {
      let after = "";
      for (;;) {
        const { rows } = await raw.query<{ id: string }>(
          `SELECT p.*, c.hit IS NOT NULL AS committed FROM (
             SELECT i.operation_id AS id, i.instance_id, i.company_id, i.run_id, i.creation_name, i.creator, i.creator_boot_id, i.created_at, i.next_attempt_at, i.settle_deadline
             FROM sandbox_creation_intents i WHERE i.instance_id = $1 AND i.status = 'pending' AND i.operation_id > $2 ORDER BY i.operation_id LIMIT $3) p
           LEFT JOIN LATERAL (SELECT true AS hit FROM environment_leases l WHERE l.intent_id = p.id LIMIT 1) c ON true ORDER BY p.id`,
          [OUR_INSTANCE, after, pageSize],
        );
        const last = rows[rows.length - 1];
        if (!last) return;
        after = last.id;
      }
    };
    let judged = 0;
    const pass = await compare(
      "sweep: live creators' intents judged",
      size,
      async () => {
        const s = await sweepCreationIntents(controller.ctx, "bench");
        judged = s.judged;
        if (s.judged !== backlog || s.reclaimed !== 0) throw new Error(`the pass judged ${s.judged} of ${backlog} and reclaimed ${s.reclaimed}: expected every row to wait`);
      },
      scan,
      // A controller sweeps every interval, so its passes run warm: the first few (JIT, plans per
      // connection) took 3–7× a warm one, and with one warm-up they were the median of five.
      { reps: 15, warmup: 6, note: `${backlog} pending intents, pages of ${pageSize}; raw: the same rows and columns in keyset pages` },
    );
    out.push(pass);
    out.push(unitFigure("sweep: live creators' intents judged/s", size, judged / (pass.oursMedianMs / 1000), "intents/s", `median pass; raw scan ${(backlog / (pass.rawMedianMs / 1000)).toFixed(0)} rows/s`));
    await raw.query(`DELETE FROM sandbox_creation_intents WHERE instance_id = $1 AND status = 'pending'`, [OUR_INSTANCE]);
    // What autovacuum does after a delete this large, before the reclaims are timed: the pass
    // would otherwise walk the deleted backlog's index entries (a bench artefact: no backlog
    // leaves at once in production).
    await raw.query("VACUUM ANALYZE sandbox_creation_intents");

    // Reclaims: abandoned intents of an exited creator, planted as sandboxes in the emulator.
    const dead = evidenceIdentity(await exitedProcessIdentity());
    const abandon = (n: number) => abandonIntents(db, admin, n, OUR_INSTANCE, "co-0001", dead);
    // A warm-up pass first, untimed (as the list figures' warm-up, and as section 2 of the
    // default bench precedes its 2b): the emulator process is new at each size, and its first
    // requests and the reclaim path's first calls are compiled while they run.
    await abandon(WARMUP_RECLAIMS);
    const warm = await sweepCreationIntents(controller.ctx, "bench");
    if (warm.reclaimed !== WARMUP_RECLAIMS) throw new Error(`warm-up: reclaimed ${warm.reclaimed} of ${WARMUP_RECLAIMS} abandoned intents`);
    // The provider's own round trips for a reclaim (get by name, destroy; as many at a time
    // as the sweep has lanes), then the timed pass.
    const floorPerSec = await reclaimFloor(admin, provider, { n: FLOOR_N, lanes: sweepLanes, instanceId: OUR_INSTANCE, companyId: "co-0001" });
    await abandon(RECLAIMS);
    const t = performance.now();
    const s = await sweepCreationIntents(controller.ctx, "bench");
    const secs = (performance.now() - t) / 1000;
    if (s.reclaimed !== RECLAIMS || s.destroyed !== RECLAIMS) throw new Error(`reclaimed ${s.reclaimed} and destroyed ${s.destroyed} of ${RECLAIMS} abandoned intents`);
    out.push(
      unitFigure("sweep: reclaims/s", size, RECLAIMS / secs, "reclaims/s", `${RECLAIMS} abandoned intents, ${sweepLanes} provider calls at once (batches of ${reclaimBatching(sweepLanes).batchSize}); floor: the provider's own get by name + destroy ${floorPerSec.toFixed(0)}/s (×${(floorPerSec / (RECLAIMS / secs)).toFixed(2)})`),
    );
  } finally {
    await controller.stop("bench");
    await emulator.killAllProcesses().catch(() => 0);
    await emulator.close();
    await db.$disconnect();
  }
  return out;
}
