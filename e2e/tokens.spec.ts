import { expect, expectAccessible, hydrated, screenshot, tag, test } from "./support";
import { ACCOUNTS, stateFile } from "./accounts";
import { e2eDb } from "./db";

test("an admin creates an API token, sees it once (after a reload only its prefix remains), and revokes it after confirming", async ({ browser }) => {
  const db = e2eDb();
  const context = await browser.newContext({ storageState: stateFile("admin") });
  try {
    const page = await context.newPage();
    await page.goto("/");
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "API tokens" }).click();
    await expect(page.getByRole("heading", { level: 1, name: "API tokens" })).toBeVisible();

    const name = `e2e bot ${tag()}`;
    // Filled before hydration, the form would be reset and its click lost (e2e/support.ts).
    await hydrated(page.getByRole("button", { name: "Create token" }));
    await page.getByLabel("Name").fill(name);
    await page.getByLabel("Role").selectOption("board");
    await page.getByLabel("Companies").fill("co-e2e-tok-a, co-e2e-tok-b");
    await page.getByLabel("Lifetime").fill("7d");
    await page.getByRole("button", { name: "Create token" }).click();

    const created = page.getByTestId("token-created");
    await expect(created).toContainText(`Created token ${name}: board of co-e2e-tok-a, co-e2e-tok-b`);
    await expect(created).toContainText("This token will not be shown again.");
    await expect(created.getByRole("button", { name: "Copy" })).toBeVisible();
    const token = await page.getByTestId("created-token").inputValue();
    expect(token).toMatch(/^rw_[A-Za-z0-9_-]{43}$/);
    const prefix = token.slice(0, 11);
    const row = page.getByTestId("tokens-table").locator(`tr[data-token-name="${name}"]`);
    await expect(row.getByTestId("token-prefix")).toHaveText(`${prefix}…`);
    await expect(row.getByTestId("token-state")).toHaveText("active");
    await expect(row.getByTestId("token-last-used")).toHaveText("never");
    await expect(row).toContainText(ACCOUNTS.admin.email);
    await expectAccessible(page);
    await screenshot(page, "tokens");

    // Never again: not after a reload (only the prefix remains), not in the audit log.
    await page.reload();
    await expect(row.getByTestId("token-prefix")).toHaveText(`${prefix}…`);
    await expect(page.getByTestId("token-created")).toHaveCount(0);
    expect(await page.content()).not.toContain(token.slice(11));
    const audit = await db.auditEntry.findMany({ where: { actor: ACCOUNTS.admin.email, action: { in: ["token.create", "tokens.create"] } } });
    expect(audit.length).toBeGreaterThan(0);
    expect(JSON.stringify(audit.map((e) => [e.input, e.detail]))).not.toContain(token.slice(11));

    // Revoke asks first; Cancel changes nothing.
    await (await hydrated(row.getByRole("button", { name: "Revoke" }))).click();
    const dialog = page.getByRole("alertdialog", { name: `Revoke the token ${name}?` });
    await expect(dialog).toContainText("Its next request is refused");
    await dialog.getByRole("button", { name: "Cancel" }).click();
    await expect(row.getByTestId("token-state")).toHaveText("active");
    await row.getByRole("button", { name: "Revoke" }).click();
    await page.getByRole("alertdialog").getByRole("button", { name: "Revoke now" }).click();
    await expect(row.getByTestId("token-state")).toHaveText("revoked");
    await expect(row.getByRole("button", { name: "Revoke" })).toHaveCount(0);
    expect((await db.apiToken.findFirstOrThrow({ where: { name } })).revokedAt).not.toBeNull();
  } finally {
    await context.close();
    await db.$disconnect();
  }
});

test("a viewer is told the API tokens page needs the admin role, has no link to it, and is refused by the server", async ({ browser }) => {
  const db = e2eDb();
  const context = await browser.newContext({ storageState: stateFile("viewer") });
  try {
    const page = await context.newPage();
    await page.goto("/tokens");
    await expect(page.getByRole("heading", { level: 1, name: "API tokens" })).toBeVisible();
    await expect(page.getByTestId("needs-admin")).toContainText("Managing API tokens needs the admin role; you are signed in as viewer.");
    await expect(page.getByTestId("tokens-table")).toHaveCount(0);
    await expect(page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "API tokens" })).toHaveCount(0);
    await expectAccessible(page);

    const name = `sneaky ${tag()}`;
    const res = await page.request.post("/api/trpc/tokens.create?batch=1", {
      headers: { "content-type": "application/json" },
      data: { 0: { json: { name, role: "operator", companies: ["*"], expiresIn: "30d" } } },
    });
    expect(res.status()).toBe(403);
    expect(await db.apiToken.count({ where: { name } })).toBe(0);
    const refused = await db.auditEntry.findFirstOrThrow({ where: { action: "tokens.create", outcome: "refused", actor: ACCOUNTS.viewer.email }, orderBy: { id: "desc" } });
    expect(refused.input).toMatchObject({ name });
  } finally {
    await context.close();
    await db.$disconnect();
  }
});
