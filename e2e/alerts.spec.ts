import crypto from "node:crypto";
import { expect, expectAccessible, hydrated, screenshot, tag, test } from "./support";
import { stateFile } from "./accounts";
import { e2eDb } from "./db";
import { freePort } from "../server/test/emulator-child";
import { WebhookReceiver } from "../server/test/webhook-receiver";

test("an admin adds an alert endpoint, presses Test, and sees the signed delivery in its log", async ({ browser }) => {
  test.setTimeout(120_000);
  const db = e2eDb();
  const context = await browser.newContext({ storageState: stateFile("admin") });
  // A real receiver; the product's own controller sends to it. Its key is the secret typed below.
  const secret = `e2e-secret-${crypto.randomBytes(12).toString("hex")}`;
  const receiver = new WebhookReceiver(await freePort(), Buffer.from(secret, "utf8"), 0);
  await receiver.setMode("up");
  try {
    const page = await context.newPage();
    await page.goto("/");
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Alerts" }).click();
    await expect(page.getByRole("heading", { level: 1, name: "Alerts" })).toBeVisible();

    const name = `ops-${tag()}`;
    await hydrated(page.getByLabel("Name"));
    await page.getByLabel("Name").fill(name);
    await page.getByLabel("URL").fill(receiver.url);
    await page.getByLabel("Signing secret (optional)").fill(secret);
    await page.getByLabel(/^run\.failed/).check();
    await page.getByRole("button", { name: "Add endpoint" }).click();
    await expect(page.getByTestId("endpoint-secret")).toContainText("it will not be shown again");
    await expect(page.locator("#endpoint-secret-value")).toHaveValue(secret);
    await page.getByTestId("endpoint-secret").getByRole("button", { name: "Done" }).click();

    const row = page.getByTestId("endpoint-row").filter({ hasText: name });
    await expect(row).toContainText("enabled");
    await expect(row).toContainText("run.failed");
    await expect(row).not.toContainText(secret);
    await row.getByRole("button", { name: `Test ${name}` }).click();

    // The test event goes through the outbox; the controller delivers it and the log says so.
    const log = page.getByTestId("delivery-log");
    await expect(log.locator('[data-testid="delivery-row"][data-status="delivered"]')).toHaveCount(1, { timeout: 30_000 });
    await expect(log).toContainText(`test alert for endpoint "${name}"`);
    await expect(log).toContainText("HTTP 200");
    expect(receiver.delivered).toBe(1);
    expect(receiver.arrivals.every((a) => a.signatureValid)).toBe(true);
    expect(JSON.parse(receiver.arrivals[0]!.body)).toMatchObject({ type: "test", data: { endpoint: name } });
    await expect(page).toHaveURL(/[?&]endpoint=/);
    await expectAccessible(page);
    await screenshot(page, "alerts");
    // The endpoint's own count follows at the list's next refetch (10 s, components/alerts/
    // alerts-view.tsx): asserted after the checks above, which overlap that wait.
    await expect(row).toContainText("1 delivered");

    // Disable, then delete with a confirmation; both audited.
    await row.getByRole("button", { name: `Disable ${name}` }).click();
    await expect(row).toContainText("disabled");
    await row.getByRole("button", { name: `Delete ${name}` }).click();
    const dialog = page.getByRole("alertdialog");
    await expect(dialog).toContainText(`Delete the endpoint ${name}?`);
    await page.getByTestId("confirm-delete-endpoint").click();
    await expect(page.getByTestId("endpoint-row").filter({ hasText: name })).toHaveCount(0);
    const endpoint = await db.auditEntry.findFirstOrThrow({ where: { action: "alerts.create", input: { path: ["name"], equals: name } } });
    const actions = await db.auditEntry.findMany({ where: { targetId: endpoint.targetId }, orderBy: { id: "asc" } });
    expect(actions.map((a) => a.action)).toEqual(["alerts.create", "alerts.test", "alerts.disable", "alerts.delete"]);
  } finally {
    await receiver.stop();
    await context.close();
    await db.$disconnect();
  }
});

test("the alerts page is an admin's: an operator is told so", async ({ page }) => {
  await page.goto("/alerts");
  await expect(page.getByTestId("needs-admin")).toContainText("configured by an admin");
  await expect(page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Alerts" })).toHaveCount(0);
});
