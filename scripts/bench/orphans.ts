/**
 * `npm run bench -- --orphans [SIZES]` (docs/decisions/0003-cost-at-scale.md): the orphans page at 1 k and 10 k planted
 * sandboxes (default), before and after its inventory. "Before" is what every orphans.list
 * poll did until then — list this instance's sandboxes at the provider whole, judge every one,
 * sort, slice a page (`judgeInventory` is that work) — and "after" is the page read from the
 * inventory (one keyset page in SQL, its sandboxes judged now), against the raw SQL of the
 * same page. With this process's RSS before and after 20 polls of each.
 */
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import pino from "pino";
import { controllerConfig } from "../../server/controller/config";
import type { ControllerContext } from "../../server/controller/context";
import { createDb, type Db, type Prisma } from "../../server/db/client";
import { migrate } from "../../server/db/migrate";
import { EmulatorAdminClient } from "../../server/emulator/admin-client";
import { startEmulator } from "../../server/emulator/server";
import { readEnv } from "../../server/env";
import { currentProcessIdentity } from "../../server/process/identity";
import { DaytonaProvider } from "../../server/providers/daytona";
import { buildLabels } from "../../server/providers/labels";
import { runnerClientFor } from "../../server/providers/from-env";
import { judgeInventory, refreshInventory } from "../../server/sandboxes/inventory";
import { listOrphans } from "../../server/sandboxes/list";
import { previewReclaim } from "../../server/sandboxes/dry-run";
import { executeReclaim } from "../../server/sandboxes/reclaim";
import { confirmWord } from "../../server/shared/confirm";
import { observerOf, type Observer } from "../../server/services/observer";
import { orphansPageFigures } from "./web";
import { compare, FIGURE_HEADER, formatFigure, unitFigure, type Figure } from "./measure";
import { throwawayDatabases } from "../lib/throwaway-databases";

const say = (line = "") => process.stdout.write(`${line}\n`);
const ALL = { all: true } as const;
const COMPANIES = 10;
const PAGE = 100;
/** The most sandboxes one reclaim takes (reclaimInput). */
const RECLAIM_BATCH = 100;
const BENCH_ACTOR = { id: "bench", role: "admin" };
const mb = () => Math.round(process.memoryUsage().rss / 1024 / 1024);
const heapMb = () => Math.round(process.memoryUsage().heapUsed / 1024 / 1024);

export async function runOrphansBench(options: { sizes: number[]; reps: number; polls: number; browser: boolean }): Promise<Figure[]> {
  const dbs = await throwawayDatabases("rworph");
  const { server } = dbs;
  const database = (tag: string) => dbs.create(tag);
  const figures: Figure[] = [];
  try {
    const appUrl = await database("app");
    await migrate(appUrl);
    const emulator = await startEmulator({ port: 0, databaseUrl: await database("emu") });
    const db = createDb(appUrl, { max: 10 });
    const raw = new pg.Pool({ connectionString: appUrl, max: 2 });
    try {
      for (const size of options.sizes) {
        const instanceId = `inst-orphans-${size}`;
        const service = await plantOrphans(db, emulator.url, instanceId, size);
        const observer = observerOf(service);
        say(`\n── ${size.toLocaleString("en")} sandboxes of ${instanceId} planted in the emulator (half reclaimable, half unrecorded)`);

        // The inventory's own pass: what the page no longer does per poll.
        const t0 = performance.now();
        const pass = await refreshInventory(db, observer, instanceId);
        if (!pass) throw new Error("the inventory pass gave way");
        say(`  inventory pass (list ${pass.sandboxes} sandboxes, judge, store): ${(performance.now() - t0).toFixed(0)} ms`);
        // Inside the inventory's freshness: no background pass starts while measuring.
        const at = new Date(pass.listedAt.getTime() + 1000);
        const first = () => listOrphans(db, observer, ALL, instanceId, {}, at);
        let cursor: string | null = null;
        for (let p = 0; p < Math.floor(size / 2 / PAGE); p++) cursor = (await listOrphans(db, observer, ALL, instanceId, cursor ? { cursor } : {}, at)).nextCursor;
        const deepCursor = cursor;
        const rawPage = (keyset: boolean) => raw.query(pageSql(keyset), [instanceId]);
        await raw.query("ANALYZE sandbox_inventory");
        const plan = (await raw.query(`EXPLAIN ${pageSql(false)}`, [instanceId])).rows.map((r: Record<string, string>) => Object.values(r)[0]).join(" / ");
        say(`  the page's plan: ${plan.replace(/\s+/g, " ").slice(0, 240)}`);
        say(`\n${FIGURE_HEADER}`);
        const show = (f: Figure) => {
          figures.push(f);
          say(formatFigure(f));
        };
        const polls = async (what: string, poll: () => Promise<unknown>) => {
          const rss0 = mb();
          const heap0 = heapMb();
          let peak = rss0;
          for (let i = 0; i < options.polls; i++) {
            await poll();
            peak = Math.max(peak, mb());
          }
          // Under `node --expose-gc`: what is still held once garbage is collected (a leak, or not).
          const collect = (globalThis as { gc?: () => void }).gc;
          collect?.();
          say(`  RSS ${what}: ${rss0} MB before ${options.polls}, ${mb()} MB after (peak ${peak} MB, +${peak - rss0} MB); JS heap ${heap0} → ${heapMb()} MB${collect ? " after a full GC" : ""}`);
          figures.push(unitFigure(`RSS over ${options.polls} ${what}`, size, peak - rss0, "MB more at peak", `${rss0} MB before, peak ${peak} MB`));
        };
        // The inventory first, RSS included: RSS rarely shrinks, so the old polls' peak would hide it.
        show(await compare("orphans.list first page (inventory)", size, first, () => rawPage(false), { reps: options.reps }));
        if (deepCursor) show(await compare("orphans.list page at 50 % (inventory)", size, () => listOrphans(db, observer, ALL, instanceId, { cursor: deepCursor }, at), () => rawPage(true), { reps: options.reps }));
        await polls("inventory polls", first);
        // The passes a server runs in the background (one per 5 s at most, whatever the tabs).
        await polls("inventory passes", () => refreshInventory(db, observer, instanceId));
        // Before: every poll listed and judged everything (few reps: each takes seconds at 10 k).
        const before = () => oldPoll(db, observer, instanceId);
        show(await compare("orphans.list any page (before: list whole)", size, before, () => rawPage(false), { reps: Math.max(3, Math.round(options.reps / 10)), warmup: 1 }));
        await polls("polls before (list whole)", before);
        // The product's own web server with an /orphans tab open (the inventory lives there).
        if (options.browser) {
          for (const f of await orphansPageFigures(appUrl, size, { RUNWARDEN_INSTANCE_ID: instanceId, EMULATOR_URL: emulator.url, EMULATOR_API_KEY: "emulator-key" })) show(f);
        }
        // An operator's reclaim of a full batch (100, the most at once), one sandbox at a time
        // as before, then as many at once as a sweep has lanes; each after its own dry run.
        const reclaimable = (await raw.query<{ sandbox_id: string }>(
          `SELECT sandbox_id FROM sandbox_inventory WHERE instance_id = $1 AND verdict = 'reclaimable' ORDER BY sandbox_id LIMIT ${2 * RECLAIM_BATCH}`,
          [instanceId],
        )).rows.map((r) => r.sandbox_id);
        for (const [label, lanes, ids] of [
          ["one at a time (before)", 1, reclaimable.slice(0, RECLAIM_BATCH)],
          [`${service.config.sweepLanes} at a time`, service.config.sweepLanes, reclaimable.slice(RECLAIM_BATCH)],
        ] as const) {
          if (ids.length === 0) continue;
          const plan = await previewReclaim(db, observer, ALL, instanceId, BENCH_ACTOR, { dryRun: true, sandboxIds: [...ids] });
          const t = performance.now();
          const done = await executeReclaim(db, { ...service, config: { ...service.config, sweepLanes: lanes } }, ALL, instanceId, BENCH_ACTOR, {
            dryRun: false,
            planId: plan.planId,
            sandboxIds: [...ids],
            confirm: confirmWord(ids.length),
          });
          const ms = performance.now() - t;
          if (done.counts.destroyed !== ids.length) throw new Error(`the reclaim destroyed ${done.counts.destroyed} of ${ids.length}: ${JSON.stringify(done.counts)}`);
          show(unitFigure(`operator reclaim, ${label}`, size, ids.length / (ms / 1000), "sandboxes/s", `${ids.length} orphans in ${ms.toFixed(0)} ms, the dry run before it not counted`));
        }
      }
    } finally {
      await raw.end();
      await db.$disconnect();
      await emulator.close();
    }
  } finally {
    await dbs.dropAll();
    await server.stop();
  }
  return figures;
}

/** The page's own SQL without the judging (the floor): the first page, or one after a keyset in the middle. */
function pageSql(keyset: boolean): string {
  return `SELECT sandbox_id, name, labels, state, created_at, cpu, memory, disk, hourly_cost, accrued_cost FROM sandbox_inventory
    WHERE instance_id = $1 AND verdict IS NOT NULL ${keyset ? "AND (accrued_cost, hourly_cost, name, sandbox_id) < (0.5, 1, 'm', 'm')" : ""}
    ORDER BY accrued_cost DESC, hourly_cost DESC, name DESC, sandbox_id DESC LIMIT ${PAGE + 1}`;
}

/** What one orphans.list poll did before the inventory: the whole listing judged, sorted, a page sliced. */
async function oldPoll(db: Db, observer: Observer, instanceId: string) {
  const rows = await judgeInventory(db, observer, instanceId, new Date());
  const orphans = rows.filter((r) => r.verdict !== null);
  orphans.sort((a, b) => (b.accrued_cost ?? 0) - (a.accrued_cost ?? 0) || b.hourly_cost - a.hourly_cost || a.name.localeCompare(b.name));
  return orphans.slice(0, PAGE);
}

/** `size` sandboxes of one instance in the emulator; half named by an ended lease of a finished run (reclaimable). The service context the orphans page's actions get. */
async function plantOrphans(db: Db, emulatorUrl: string, instanceId: string, size: number): Promise<ControllerContext> {
  await db.instance.create({ data: { id: instanceId, name: instanceId } });
  const runs: Array<{ id: string; companyId: string }> = [];
  for (let c = 0; c < COMPANIES; c++) {
    runs.push(
      await db.run.create({
        data: { instanceId, companyId: `co-${c}`, taskId: `t-${c}`, agent: "a", provider: "codex", target: "remote", sandboxMode: "warm", status: "succeeded", finishedAt: new Date(Date.now() - 3600_000) },
      }),
    );
  }
  const adminClient = new EmulatorAdminClient(emulatorUrl, "emulator-key");
  const queue = Array.from({ length: size }, (_, i) => i);
  const leases: Prisma.EnvironmentLeaseCreateManyInput[] = [];
  const worker = async () => {
    for (let i = queue.shift(); i !== undefined; i = queue.shift()) {
      const run = runs[i % COMPANIES]!;
      const s = await adminClient.plant({
        name: `orph-${size}-${i}-${crypto.randomBytes(3).toString("hex")}`,
        labels: buildLabels({ instanceId, companyId: run.companyId, runId: run.id }),
        cpu: 1 + (i % 4),
        memory: 2,
        disk: 10,
        createdAt: new Date(Date.now() - (1 + (i % 48)) * 3600_000).toISOString(),
      });
      if (i % 2 === 0) leases.push({ runId: run.id, instanceId, companyId: run.companyId, provider: "emulator", providerLeaseId: s.id, sandboxName: s.name, acquisitionOutcome: "created", status: "expired", endedAt: new Date(Date.now() - (i % 24) * 3600_000) });
    }
  };
  await Promise.all(Array.from({ length: 16 }, worker));
  await db.environmentLease.createMany({ data: leases });
  const provider = new DaytonaProvider({ apiUrl: emulatorUrl, apiKey: "emulator-key", instanceId });
  const ctx: ControllerContext = {
    db,
    provider,
    providerTarget: "emulator",
    runner: runnerClientFor(provider, { apiKey: "emulator-key" }),
    identity: currentProcessIdentity(),
    config: controllerConfig(readEnv({}), { instanceId, home: fs.mkdtempSync(path.join(os.tmpdir(), "rw-orphans-")) }),
    log: pino({ level: "silent" }),
    drain: new AbortController(),
  };
  return ctx;
}

