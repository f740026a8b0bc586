import crypto from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildLabels, creationName } from "../../providers/labels";
import { json } from "../records";
import { startControllerHarness, waitFor, type ControllerHarness } from "../../test/controller";
import { controllerProcesses } from "../../test/controller-process";
import { faketime } from "../../test/faketime";

/**
 * A late materialisation (docs/rules.md §2.5) is judged and written on the database's clock,
 * as the rest of the sweep (§2.10: controllers on several hosts share one database, never one
 * system clock): a real controller process whose own clock is ten minutes behind
 * (libfaketime, server/test/faketime.ts) reclaims a sandbox that appeared after its intent
 * resolved absent, and stamps the intent's `resolved_at` (and its passes' rows) with the
 * database's time.
 */

let h: ControllerHarness;
beforeAll(async () => {
  h = await startControllerHarness();
});
afterAll(() => h.close());
const { controller } = controllerProcesses(() => h);

describe("late materialisation on the database's clock (§2.5, §2.10)", () => {
  it("a controller ten minutes behind reclaims a late sandbox and stamps resolved_at with the database's time", async () => {
    const id = crypto.randomUUID();
    const name = creationName("rw", id);
    await h.db.db.sandboxCreationIntent.create({
      data: {
        id,
        instanceId: "inst-a",
        companyId: "co-1",
        runId: `probe-${id}`,
        creationName: name,
        labels: json({ instance: "inst-a", company: "co-1", operation: id }),
        settleDeadline: new Date(Date.now() - 60_000),
        nextAttemptAt: new Date(Date.now() - 60_000),
        status: "resolved_absent",
      },
    });
    // Resolved absent a minute ago on the database's clock: inside the 30 minutes it is looked up again.
    await h.db.db.$executeRaw`UPDATE sandbox_creation_intents SET resolved_at = now() - interval '1 minute' WHERE operation_id = ${id}`;
    // The provider finishes the create after all.
    await h.emu.admin.plant({ name, labels: buildLabels({ instanceId: "inst-a", companyId: "co-1", operationId: id }) });

    await controller(faketime("-600s"));
    await waitFor("the late sandbox's reclaim", async () => ((await h.db.db.sandboxCreationIntent.findUniqueOrThrow({ where: { id } })).status === "reclaimed" ? true : null), 30_000);

    const [row] = await h.db.db.$queryRaw<Array<{ resolved_ms: number; inspected_ms: number }>>`
      SELECT extract(epoch FROM (now() - resolved_at)) * 1000 AS resolved_ms, extract(epoch FROM (now() - last_inspected_at)) * 1000 AS inspected_ms
      FROM sandbox_creation_intents WHERE operation_id = ${id}`;
    // Written within the last half minute on the database's clock; the host's said ten minutes earlier.
    expect(Number(row?.resolved_ms), "resolved_at behind the database's now() (ms)").toBeGreaterThanOrEqual(0);
    expect(Number(row?.resolved_ms), "resolved_at behind the database's now() (ms)").toBeLessThan(30_000);
    expect(Number(row?.inspected_ms), "last_inspected_at behind the database's now() (ms)").toBeLessThan(30_000);
    // The passes' rows too: started and finished on the database's clock.
    const [passes] = await h.db.db.$queryRaw<Array<{ n: number; started_ms: number; finished_ms: number | null }>>`
      SELECT count(*)::int AS n, max(abs(extract(epoch FROM (now() - started_at)))) * 1000 AS started_ms,
        max(abs(extract(epoch FROM (now() - finished_at)))) * 1000 AS finished_ms
      FROM sweep_passes`;
    expect(Number(passes?.n)).toBeGreaterThan(0);
    expect(Number(passes?.started_ms), "the passes' started_at off the database's now() (ms)").toBeLessThan(30_000);
    expect(Number(passes?.finished_ms ?? 0), "the passes' finished_at off the database's now() (ms)").toBeLessThan(30_000);
  }, 90_000);
});
