import crypto from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { exitedProcessIdentity } from "../process/exited";
import { buildLabels, creationName } from "../providers/labels";
import { evidenceIdentity } from "./context";
import { spawnController, type ControllerProcessHandle } from "../test/controller-process";
import { json } from "./records";
import { startControllerHarness, waitFor, type ControllerHarness } from "../test/controller";
import { tempDirs } from "../test/temp";

const home = tempDirs("rw-scale-");

/** Several real controllers sweeping one database: each row is acted on exactly once. */

const ABANDONED = 500;
let h: ControllerHarness;
const procs: ControllerProcessHandle[] = [];

beforeAll(async () => {
  h = await startControllerHarness();
});
afterAll(async () => {
  for (const p of procs) {
    p.kill("SIGKILL");
    await p.exited;
  }
  await h.close();
});

describe("4 controllers, 500 abandoned intents", () => {
  it("destroys every abandoned sandbox exactly once and touches no foreign one", { timeout: 240_000 }, async () => {
    const dead = evidenceIdentity(await exitedProcessIdentity());

    const intents = [];
    const sandboxIds: string[] = [];
    for (let i = 0; i < ABANDONED; i++) {
      const id = crypto.randomUUID();
      const name = creationName("rw", id);
      const planted = await h.emu.admin.plant({ name, labels: buildLabels({ instanceId: "inst-a", companyId: "co-1", operationId: id }) });
      sandboxIds.push(planted.id);
      intents.push({
        id,
        instanceId: "inst-a",
        companyId: "co-1",
        runId: `probe-${i}`,
        creationName: name,
        labels: json({ instance: "inst-a", company: "co-1", operation: id }),
        creator: json(dead),
        creatorBootId: dead.bootId,
        settleDeadline: new Date(Date.now() + 60_000),
        nextAttemptAt: new Date(Date.now() + 30 * 60_000),
      });
    }
    // Decoys: another instance's sandboxes, another company's under our intents, another host's creator.
    const decoys: string[] = [];
    for (let i = 0; i < 10; i++) {
      decoys.push((await h.emu.admin.plant({ name: `rw-create-other-instance-${i}`, labels: buildLabels({ instanceId: "inst-b", companyId: "co-1", operationId: `x${i}` }) })).id);
      const id = crypto.randomUUID();
      const name = creationName("rw", id);
      decoys.push((await h.emu.admin.plant({ name, labels: buildLabels({ instanceId: "inst-a", companyId: "co-other", operationId: id }) })).id);
      intents.push({ ...intents[0]!, id, creationName: name, runId: `decoy-company-${i}`, labels: json({ instance: "inst-a", company: "co-1", operation: id }) });
      const id2 = crypto.randomUUID();
      const name2 = creationName("rw", id2);
      decoys.push((await h.emu.admin.plant({ name: name2, labels: buildLabels({ instanceId: "inst-a", companyId: "co-1", operationId: id2 }) })).id);
      const foreign = { ...dead, bootId: crypto.randomUUID(), pidSpace: "ps-another-host" };
      intents.push({ ...intents[0]!, id: id2, creationName: name2, runId: `decoy-host-${i}`, creator: json(foreign), creatorBootId: foreign.bootId, labels: json({ instance: "inst-a", company: "co-1", operation: id2 }) });
    }
    await h.db.db.sandboxCreationIntent.createMany({ data: intents });

    const started = Date.now();
    for (let i = 0; i < 4; i++) {
      const p = spawnController({
        DATABASE_URL: h.db.url,
        EMULATOR_URL: h.emu.emulator.url,
        RUNWARDEN_INSTANCE_ID: "inst-a",
        RUNWARDEN_CONTROLLER_HOME: home(),
        RUNWARDEN_SWEEP_INTERVAL_MS: "200",
        LOG_LEVEL: "warn",
      });
      procs.push(p);
    }
    await Promise.all(procs.map((p) => p.ready.catch(() => undefined)));
    await waitFor(
      "every abandoned intent to be reclaimed and torn down",
      async () => (await h.db.db.environmentLease.count({ where: { status: "expired", cleanupStatus: { in: ["destroyed", "already_gone"] } } })) >= ABANDONED,
      180_000,
    );
    const seconds = (Date.now() - started) / 1000;
    console.log(`scale: ${ABANDONED} abandoned intents reclaimed and destroyed by 4 controllers in ${seconds.toFixed(1)} s`);

    const leases = await h.db.db.environmentLease.findMany({ where: { intentId: { not: null } } });
    expect(leases).toHaveLength(ABANDONED);
    expect(leases.every((l) => l.status === "expired" && l.cleanupStatus === "destroyed")).toBe(true);
    expect(await h.db.db.proof.count({ where: { kind: "creation_intent", verdict: "reclaim" } })).toBe(ABANDONED);
    const states = new Map((await h.emu.admin.sandboxes({ includeDestroyed: true })).map((s) => [s.id, s.state]));
    expect(sandboxIds.every((id) => /^destroy(ing|ed)$/.test(states.get(id) ?? ""))).toBe(true);
    expect(decoys.every((id) => states.get(id) === "started")).toBe(true);
    const sweepers = await h.db.db.sweepPass.groupBy({ by: ["bootId"], where: { reclaimed: { gt: 0 } }, _sum: { reclaimed: true } });
    expect(sweepers.reduce((n, s) => n + (s._sum.reclaimed ?? 0), 0)).toBe(ABANDONED);
    console.log(`scale: reclaims per controller ${sweepers.map((s) => s._sum.reclaimed).join(", ")}`);
  });
});
