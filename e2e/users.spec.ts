import { expect, test } from "@playwright/test";
import { ACCOUNTS, resetSignInLimits, stateFile } from "./accounts";
import { e2eDb } from "./db";
import { expectAccessible, screenshot, tag } from "./support";

test("an admin sees the people and adds one: the generated password is shown once, and it signs them in", async ({ browser }) => {
  const db = e2eDb();
  const adminContext = await browser.newContext({ storageState: stateFile("admin") });
  const newcomerContext = await browser.newContext({ storageState: { cookies: [], origins: [] } });
  try {
    const page = await adminContext.newPage();
    await page.goto("/");
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Users" }).click();
    await expect(page.getByRole("heading", { level: 1, name: "Users" })).toBeVisible();
    const table = page.getByTestId("users-table");
    await expect(table.locator(`tr[data-user-email="${ACCOUNTS.operator.email}"]`)).toContainText("all companies (*)");
    await expect(table.locator(`tr[data-user-email="${ACCOUNTS.board.email}"]`)).toContainText("board");

    const email = `new-${tag()}@e2e.test`;
    await page.getByLabel("Email").fill(email.toUpperCase());
    await page.getByLabel("Role").selectOption("board");
    await page.getByLabel("Companies").fill("co-x,  co-y ,");
    await page.getByRole("button", { name: "Add person" }).click();
    const added = page.getByTestId("user-added");
    await expect(added).toContainText(`Added ${email} as board of co-x, co-y.`);
    await expect(added).toContainText("Their password will not be shown again.");
    const password = await page.getByTestId("generated-password").inputValue();
    expect(password.length).toBeGreaterThanOrEqual(10);
    await expect(table.locator(`tr[data-user-email="${email}"]`)).toContainText("co-x, co-y");
    await expectAccessible(page);
    await screenshot(page, "users");

    // Never again: not after a reload, not in the audit log.
    await page.reload();
    await expect(page.getByTestId("user-added")).toHaveCount(0);
    await expect(page.getByText(password)).toHaveCount(0);
    const audit = await db.auditEntry.findFirstOrThrow({ where: { action: "user.add", actor: ACCOUNTS.admin.email }, orderBy: { id: "desc" } });
    expect(JSON.stringify([audit.input, audit.detail])).not.toContain(password);

    // The same email again is refused with the reason.
    await page.getByLabel("Email").fill(email);
    await page.getByLabel("Companies").fill("*");
    await page.getByRole("button", { name: "Add person" }).click();
    await expect(page.getByRole("alert").filter({ hasText: "The person was not added." })).toContainText(`a user with email ${email} already exists`);

    // The password works, once, for the new person.
    await resetSignInLimits(db);
    const newcomer = await newcomerContext.newPage();
    await newcomer.goto("/sign-in");
    await newcomer.getByLabel("Email").fill(email);
    await newcomer.getByLabel("Password").fill(password);
    await newcomer.getByRole("button", { name: "Sign in" }).click();
    await expect(newcomer).toHaveURL(/\/$/);
    await expect(newcomer.getByTestId("signed-in-as")).toContainText(email);
    await expect(newcomer.getByTestId("signed-in-as")).toContainText("board");
    await expect(newcomer.getByTestId("signed-in-as")).toContainText("co-x, co-y");
  } finally {
    await resetSignInLimits(db);
    await adminContext.close();
    await newcomerContext.close();
    await db.$disconnect();
  }
});

test("anyone else is told the Users page needs the admin role, has no Users link, and is refused by the server", async ({ page }) => {
  const db = e2eDb();
  try {
    await page.goto("/users");
    await expect(page.getByRole("heading", { level: 1, name: "Users" })).toBeVisible();
    await expect(page.getByTestId("needs-admin")).toContainText("Managing people needs the admin role; you are signed in as operator.");
    await expect(page.getByTestId("users-table")).toHaveCount(0);
    await expect(page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Users" })).toHaveCount(0);
    await expectAccessible(page);

    const email = `sneaky-${tag()}@e2e.test`;
    const res = await page.request.post("/api/trpc/users.add?batch=1", {
      headers: { "content-type": "application/json" },
      data: { 0: { json: { email, role: "admin", companies: ["*"], password: "a sneaky password" } } },
    });
    expect(res.status()).toBe(403);
    expect(await db.user.count({ where: { email } })).toBe(0);
    const refused = await db.auditEntry.findFirstOrThrow({ where: { action: "users.add", outcome: "refused", actor: ACCOUNTS.operator.email }, orderBy: { id: "desc" } });
    expect(refused.input).toMatchObject({ email, password: "[redacted]" });
  } finally {
    await db.$disconnect();
  }
});
