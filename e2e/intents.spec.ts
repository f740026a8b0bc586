import { eventually, expect, expectAccessible, screenshot, tag, test, trpcQuery } from "./support";
import crypto from "node:crypto";
import { e2eDb } from "./db";

test("pending intents show each creator's live verdict; Run sweep now shows what it decided", async ({ page }) => {
  const db = e2eDb();
  try {
    const t = tag();
    const { instanceId } = await trpcQuery<{ instanceId: string }>(page.request, "intents.list", {});
    // The running controller: alive, judged from the dashboard's host.
    const controller = await eventually("a controller record", () => db.controllerProcess.findFirst({ where: { instanceId, stoppedAt: null }, orderBy: { bootedAt: "desc" } }));
    const identity = {
      bootId: controller.bootId,
      pid: controller.pid,
      startedAt: controller.startedAt.toISOString(),
      startTicks: controller.startTicks === null ? null : Number(controller.startTicks),
      pidSpace: controller.pidSpace,
    };
    const now = Date.now();
    const make = (key: string, creator: unknown, over: { runId?: string; settleDeadline?: Date } = {}) => {
      const id = crypto.randomUUID();
      return db.sandboxCreationIntent.create({
        data: {
          id,
          instanceId,
          companyId: `co-e2e-intents-${t}`,
          runId: over.runId ?? `probe-${key}-${t}`,
          creationName: `rw-create-${id}`,
          labels: { instance: instanceId, company: `co-e2e-intents-${t}`, operation: id },
          creator: creator as object,
          createdAt: new Date(now - 5 * 60_000),
          settleDeadline: over.settleDeadline ?? new Date(now + 60 * 60_000),
          nextAttemptAt: new Date(now + 30 * 60_000),
        },
      });
    };
    const alive = await make("alive", identity);
    const foreign = await make("foreign", { ...identity, bootId: `b-other-${t}`, pidSpace: "ps-another-host" });
    // Its creator is gone and the sandbox never appeared: the sweep resolves it as absent.
    const gone = await make("gone", { ...identity, bootId: `b-gone-${t}`, pid: 999_999 }, { settleDeadline: new Date(now - 1000) });

    await page.goto(`/intents?status=all&company=co-e2e-intents-${t}`);
    const table = page.getByTestId("intents-table");
    const row = (id: string) => table.locator(`tr[data-intent-id="${id}"]`);
    await expect(row(alive.id)).toContainText("alive");
    await expect(row(alive.id)).toContainText("still running on this host");
    await expect(row(alive.id)).toContainText("no run");
    await expect(row(foreign.id)).toContainText("unknown");
    await expect(row(foreign.id)).toContainText("another host");
    await expect(row(alive.id)).toContainText("wait");

    const clickedAt = new Date();
    await page.getByRole("button", { name: "Run sweep now" }).click();
    await expect(page.getByTestId("sweep-result")).toContainText("Creation intents:");
    await expect(page.getByTestId("sweep-result")).toContainText("Teardown:");
    // Whichever sweep (this one or the controller's) got there first, the abandoned intent is settled.
    await eventually("the abandoned intent to be resolved", async () => (await db.sandboxCreationIntent.findUniqueOrThrow({ where: { id: gone.id } })).status === "resolved_absent");
    await expect(row(gone.id)).toContainText("resolved_absent");
    // The last inspection reads in words; the record as stored is folded away.
    const inspection = row(gone.id).getByTestId("last-inspection");
    await expect(inspection).toContainText("No sandbox with its exact name existed at the provider.");
    await expect(inspection).not.toHaveText(/"found"/, { useInnerText: true });
    await expect(row(alive.id)).toContainText("pending");
    // This click's sweep is audited (not an earlier spec's: only entries since the click count).
    expect(await db.auditEntry.count({ where: { action: "sweep.run", outcome: "ok", at: { gte: clickedAt } } })).toBeGreaterThan(0);

    await expectAccessible(page);
    await screenshot(page, "intents");
  } finally {
    await db.$disconnect();
  }
});
