import { emulatorSandboxes, expect, expectAccessible, inventoried, plant, screenshot, tag, test, trpcQuery } from "./support";
import fs from "node:fs";
import { ACCOUNTS } from "./accounts";
import { e2eDb } from "./db";

test("an operator reclaims an orphan; the audit log shows it with its input, filters live in the address, and the CSV and JSON exports contain it", async ({ page, baseURL, playwright }) => {
  const db = e2eDb();
  try {
    const t = tag();
    const { instanceId } = await trpcQuery<{ instanceId: string }>(page.request, "intents.list", {});
    const companyId = `co-e2e-audit-${t}`;
    await db.instance.upsert({ where: { id: instanceId }, create: { id: instanceId, name: instanceId }, update: {} });
    const run = await db.run.create({
      data: { instanceId, companyId, taskId: `audit-task-${t}`, agent: "planner", provider: "codex", target: "remote", sandboxMode: "warm", status: "succeeded", finishedAt: new Date(Date.now() - 3600_000) },
    });
    const orphan = await plant(baseURL, {
      name: `e2e-audit-${t}`,
      labels: { "runwarden.instance": instanceId, "runwarden.company": companyId, "runwarden.run": run.id },
      createdAt: new Date(Date.now() - 2 * 3600_000).toISOString(),
    });
    // Reclaimable needs a record of this instance naming the sandbox (§2.9): its ended lease.
    await db.environmentLease.create({
      data: { runId: run.id, instanceId, companyId, provider: "emulator", providerLeaseId: orphan.id, sandboxName: orphan.name, acquisitionOutcome: "created", status: "expired", endedAt: new Date() },
    });

    // Reclaim it through the page: dry run, typed confirmation.
    await inventoried(page.request, orphan.id);
    await page.goto(`/orphans?company=${companyId}`);
    await page.getByLabel(`Select ${orphan.name}`).check();
    await page.getByRole("button", { name: "Dry run (1 selected)" }).click();
    await expect(page.getByTestId("dry-run").locator(`tr[data-result-for="${orphan.id}"]`)).toHaveAttribute("data-outcome", "would_destroy");
    await page.getByLabel(/Type destroy 1 to destroy 1 sandbox/).fill("destroy 1");
    await page.getByRole("button", { name: "Destroy 1 sandbox" }).click();
    await expect(page.getByTestId("reclaim-result").locator(`tr[data-result-for="${orphan.id}"]`)).toHaveAttribute("data-outcome", "destroyed");
    // Deleted: `destroying` for a moment, then `destroyed` (as in Daytona).
    expect((await emulatorSandboxes(baseURL)).find((s) => s.id === orphan.id)?.state).toMatch(/^destroy(ing|ed)$/);
    const entry = await db.auditEntry.findFirstOrThrow({ where: { action: "orphans.reclaim", actor: ACCOUNTS.operator.email, outcome: "ok" }, orderBy: { id: "desc" } });
    expect(JSON.stringify(entry.input)).toContain(orphan.id);

    // The audit page, filtered through its controls; the filters are in the address.
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Audit" }).click();
    await expect(page.getByRole("heading", { level: 1, name: "Audit log" })).toBeVisible();
    await page.getByLabel("Action").fill("orphans.reclaim");
    await page.getByLabel("Action").press("Enter");
    await expect(page).toHaveURL(/action=orphans\.reclaim/);
    await page.getByLabel("Outcome").selectOption("ok");
    await expect(page).toHaveURL(/outcome=ok/);
    const rows = page.getByTestId("audit-table").locator("tbody tr");
    await expect(rows.first()).toHaveAttribute("data-audit-id", entry.id.toString());
    // Every row the filters leave is such an entry (counted, not iterated: the list polls
    // and re-renders, so a snapshot of rows can go stale under the assertion).
    const table = page.getByTestId("audit-table");
    await expect(table.locator('tbody tr:not([data-action="orphans.reclaim"])')).toHaveCount(0);
    await expect(table.locator('tbody tr:not([data-outcome="ok"])')).toHaveCount(0);
    const row = page.locator(`tr[data-audit-id="${entry.id}"]`);
    await expect(row).toContainText(ACCOUNTS.operator.email);
    await expect(row).toContainText("reclaim_plan");
    await row.locator("summary").click();
    await expect(row.getByLabel(`Input of entry ${entry.id}`)).toContainText(orphan.id);
    await expect(row.getByLabel(`Detail of entry ${entry.id}`)).toContainText("destroyed");

    await page.reload();
    await expect(page.getByLabel("Action")).toHaveValue("orphans.reclaim");
    await expect(page.getByLabel("Outcome")).toHaveValue("ok");
    await expect(rows.first()).toHaveAttribute("data-audit-id", entry.id.toString());
    await expectAccessible(page);
    await screenshot(page, "audit");

    // CSV of everything the filters match: this entry, and nothing another filter would add.
    const [csvDownload] = await Promise.all([page.waitForEvent("download"), page.getByTestId("export-csv").click()]);
    expect(csvDownload.suggestedFilename()).toMatch(/^runwarden-audit-\d{8}T\d{6}Z\.csv$/);
    const csv = fs.readFileSync((await csvDownload.path())!, "utf8").trim().split("\n");
    expect(csv[0]).toBe("id,at,actor,role,action,targetType,targetId,companyId,outcome,input,detail");
    const line = csv.find((l) => l.startsWith(`"${entry.id}",`));
    expect(line).toBeDefined();
    expect(line).toContain(`"${ACCOUNTS.operator.email}","operator","orphans.reclaim","reclaim_plan"`);
    expect(line).toContain(orphan.id);
    for (const l of csv.slice(1)) expect(l).toContain(`"orphans.reclaim"`);

    const [jsonDownload] = await Promise.all([page.waitForEvent("download"), page.getByTestId("export-json").click()]);
    expect(jsonDownload.suggestedFilename()).toMatch(/^runwarden-audit-\d{8}T\d{6}Z\.json$/);
    const json = JSON.parse(fs.readFileSync((await jsonDownload.path())!, "utf8")) as Array<{ id: string; action: string; outcome: string; input: unknown }>;
    expect(json.find((e) => e.id === entry.id.toString())?.input).toEqual(entry.input);
    expect(json.every((e) => e.action === "orphans.reclaim" && e.outcome === "ok")).toBe(true);

    // The export needs a session, and names a wrong parameter.
    const anonymous = await playwright.request.newContext({ baseURL, storageState: { cookies: [], origins: [] } });
    try {
      expect((await anonymous.get("/api/audit/export?format=csv")).status()).toBe(401);
    } finally {
      await anonymous.dispose();
    }
    const bad = await page.request.get("/api/audit/export?format=csv&from=yesterday");
    expect(bad.status()).toBe(400);
    expect(await bad.text()).toContain("from: not a date");
  } finally {
    await db.$disconnect();
  }
});

test("older entries: a stable cursor pages through the log, and new entries appear on the newest page while it is open", async ({ page }) => {
  const db = e2eDb();
  try {
    const actor = `pager-${tag()}@e2e.test`;
    const entry = (n: number) => ({ actor, role: "viewer", action: "e2e.page", targetType: "test", targetId: `n${n}`, outcome: "ok" });
    await db.auditEntry.createMany({ data: Array.from({ length: 60 }, (_, i) => entry(i)) });
    const ids = (await db.auditEntry.findMany({ where: { actor }, orderBy: { id: "desc" }, select: { id: true } })).map((e) => e.id.toString());

    await page.goto(`/audit?actor=${encodeURIComponent(actor)}`);
    const rows = page.getByTestId("audit-table").locator("tbody tr");
    await expect(rows).toHaveCount(50);
    await expect(rows.first()).toHaveAttribute("data-audit-id", ids[0]!);
    await page.getByRole("button", { name: "Older entries" }).click();
    // The cursor is a signed token (docs/access.md), not the entry id.
    await expect(page).toHaveURL(/before=[^&]+/);
    await expect(rows).toHaveCount(10);
    await expect(rows.first()).toHaveAttribute("data-audit-id", ids[50]!);
    await expect(page.getByRole("button", { name: "Older entries" })).toBeDisabled();

    // Something new happens: the older page stays exactly as it was.
    await db.auditEntry.create({ data: entry(60) });
    await page.reload();
    await expect(rows).toHaveCount(10);
    await expect(rows.first()).toHaveAttribute("data-audit-id", ids[50]!);

    // The newest page shows it, and polls for more while open.
    await page.getByRole("button", { name: "Newest entries" }).click();
    await expect(page).not.toHaveURL(/before=/);
    await expect(rows.first()).toContainText("n60");
    await db.auditEntry.create({ data: entry(61) });
    await expect(rows.first()).toContainText("n61");
    await expect(rows).toHaveCount(50);
  } finally {
    await db.$disconnect();
  }
});

test("a person added (user.add) is named by email as the target, not by their id", async ({ page }) => {
  const db = e2eDb();
  try {
    const viewer = await db.user.findUniqueOrThrow({ where: { email: ACCOUNTS.viewer.email } });
    await page.goto("/audit?action=user.add");
    const target = page.getByTestId("target-label").filter({ hasText: ACCOUNTS.viewer.email }).first();
    await expect(target).toBeVisible();
    await expect(target).toHaveAttribute("title", viewer.id);
  } finally {
    await db.$disconnect();
  }
});
