import { expect, expectAccessible, inventoried, plant, rejectedRun, screenshot, tag, test, trpcQuery } from "./support";
import { describeFailure } from "../server/engine";
import { e2eDb } from "./db";

const REJECTED = "native_provider_startup_rejected";

test("the overview says what needs attention, each a link to the filtered page; status counts are links", async ({ page, baseURL }) => {
  const db = e2eDb();
  try {
    const t = tag();
    // A run the provider rejected: a failure waiting for Retry.
    await rejectedRun(db, baseURL, page.request);
    // An orphan of this instance (our labels, no records) with a price per hour.
    const { instanceId } = await trpcQuery<{ instanceId: string }>(page.request, "intents.list", {});
    const orphan = await plant(baseURL, { name: `e2e-home-orphan-${t}`, labels: { "runwarden.instance": instanceId, "runwarden.company": `co-e2e-home-${t}` }, cpu: 2, memory: 4, disk: 10 });
    await inventoried(page.request, orphan.id);
    // The newest wave (this spec runs before the waves spec stores any), and it failed.
    const waveId = `Wave-Home-${t}`;
    await db.chaosWave.create({ data: { id: waveId, seed: 7, instanceId: `wave-${t}`, companyId: null, status: "failed", passed: false, plan: {}, config: { tasks: 4 }, summary: { tasks: 4, tasksPassed: 1 }, startedAt: new Date() } });

    const waiting = await db.run.count({ where: { status: "failed", canRetry: true, failureCode: REJECTED, nextRun: null } });
    await page.goto("/");
    await expect(page.getByRole("heading", { name: "Overview", level: 1 })).toBeVisible();

    const retry = page.getByTestId("attention-retry");
    await expect(retry).toHaveAttribute("data-attention", "yes");
    const group = retry.getByRole("link", { name: new RegExp(REJECTED) });
    await expect(group).toContainText(`${waiting} ×`);
    await expect(retry).toContainText(describeFailure(REJECTED)!.message);

    const orphans = page.getByTestId("attention-orphans");
    // As of the orphans inventory, which has listed the orphan planted just now (inventoried above).
    await expect(orphans).toHaveAttribute("data-attention", "yes", { timeout: 30_000 });
    await expect(orphans.getByTestId("orphans-hourly")).toContainText(/\$\d+\.\d+ an hour/);
    await expect(orphans.getByRole("link").first()).toHaveAttribute("href", "/orphans");

    const wave = page.getByTestId("attention-wave");
    await expect(wave.getByRole("link", { name: waveId })).toHaveAttribute("href", `/waves/${waveId}`);
    await expect(wave).toContainText("1 of 4 tasks passed");
    await expect(page.getByTestId("attention-intents")).toBeVisible();
    // The product's own controller heartbeats, and its provider answers.
    const health = page.getByTestId("attention-health");
    // With the build it runs and the runner program it ships (docs/operations.md, "Upgrades and migrations").
    await expect(health.getByTestId("controllers-live")).toContainText(/\d+ controllers? running \(\d+\.\d+\.\d+(\+[0-9a-f]{7})?, runner [0-9a-f]{8} \(protocol 1\)\)\./);
    await expect(health).toContainText("The provider answers.");

    // Status counts read from PostgreSQL, each a link to its runs.
    const expected = await db.run.groupBy({ by: ["status"], _count: { _all: true } });
    for (const row of expected) await expect(page.getByTestId(`count-${row.status}`)).toContainText(String(row._count._all));
    await expectAccessible(page);
    await screenshot(page, "overview");

    await group.click();
    await expect(page).toHaveURL(new RegExp(`/runs\\?.*code=${REJECTED}`));
    await expect(page.getByLabel("Failure code")).toHaveValue(REJECTED);
    await expect(page.getByLabel("Status")).toHaveValue("failed");

    await page.goto("/");
    await page.getByTestId("count-failed").click();
    await expect(page).toHaveURL(/\/runs\?status=failed$/);
    await expect(page.getByLabel("Status")).toHaveValue("failed");
  } finally {
    await db.$disconnect();
  }
});

test("the overview says when the provider is unreachable, since when, the last error and the runs waiting (§2.8)", async ({ page }) => {
  const db = e2eDb();
  const bootId = `e2e-breaker-${tag()}`;
  try {
    const { instanceId } = await trpcQuery<{ instanceId: string }>(page.request, "intents.list", {});
    // A controller whose breaker is open, as it records it on its row (it heartbeats: it is live).
    await db.controllerProcess.create({
      data: { bootId, instanceId, pid: 999_999, startedAt: new Date(), hostname: "e2e-other-host", pidSpace: "ps-e2e-other", providerUnavailableSince: new Date(Date.now() - 90_000), providerLastError: "GET /sandbox/rw-breaker-probe: no answer within 30000 ms" },
    });
    await page.goto("/");
    const health = page.getByTestId("attention-health");
    await expect(health).toHaveAttribute("data-attention", "yes");
    await expect(health.getByTestId("provider-outage")).toContainText(/Provider unreachable since .+ \(last error: GET \/sandbox\/rw-breaker-probe: no answer within 30000 ms\): \d+ runs? waiting\. No run fails for it/);
    await expectAccessible(page);
  } finally {
    await db.controllerProcess.deleteMany({ where: { bootId } });
    await db.$disconnect();
  }
});

