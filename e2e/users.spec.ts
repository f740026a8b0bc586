import { expect, expectAccessible, hydrated, screenshot, tag, test } from "./support";
import type { Page } from "@playwright/test";
import { addUser } from "../server/auth/users";
import { ACCOUNTS, resetSignInLimits, stateFile } from "./accounts";
import { e2eDb } from "./db";

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
    // Filled before hydration, the form would be reset and its click lost (e2e/support.ts).
    await hydrated(newcomer.getByLabel("Password"));
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

test("an admin edits a person, disables them (their open session ends at once), resets their password after confirming, and enables them again", async ({ browser }) => {
  const db = e2eDb();
  const email = `leaver-${tag()}@e2e.test`;
  const added = await addUser(db, { email, role: "viewer", companies: ["co-e2e-people"], password: "the first password" }, { id: "e2e:users.spec", role: "admin" }, { all: true });
  const adminContext = await browser.newContext({ storageState: stateFile("admin") });
  const personContext = await browser.newContext({ storageState: { cookies: [], origins: [] } });
  const signIn = async (page: Page, password: string) => {
    await page.goto("/sign-in");
    await hydrated(page.getByLabel("Password"));
    await page.getByLabel("Email").fill(email);
    await page.getByLabel("Password").fill(password);
    await Promise.all([page.waitForResponse((r) => r.url().endsWith("/api/auth/sign-in/email")), page.getByRole("button", { name: "Sign in" }).click()]);
  };
  try {
    await resetSignInLimits(db);
    const them = await personContext.newPage();
    await signIn(them, "the first password");
    await expect(them.getByTestId("signed-in-as")).toContainText(email);

    const page = await adminContext.newPage();
    await page.goto("/users");
    const row = page.getByTestId("users-table").locator(`tr[data-user-email="${email}"]`);
    const panel = page.getByTestId("users-table").locator(`tr[data-user-email-panel="${email}"]`);
    await expect(row.getByTestId("person-status")).toHaveText("active");

    // Edit: a bad company id is refused with the server's reason, then a good change lands.
    await (await hydrated(row.getByRole("button", { name: "Edit" }))).click();
    await panel.getByLabel(`Companies of ${email}`).fill(`co-e2e-people, ${"x".repeat(121)}`);
    await panel.getByRole("button", { name: "Save" }).click();
    await expect(panel.getByRole("alert")).toContainText(`${email} was not changed.`);
    await expect(panel.getByRole("alert")).toContainText("at most 120 characters");
    await panel.getByLabel(`Role of ${email}`).selectOption("board");
    await panel.getByLabel(`Companies of ${email}`).fill("co-e2e-people, co-e2e-other");
    await panel.getByRole("button", { name: "Save" }).click();
    await expect(row).toContainText("board");
    await expect(row).toContainText("co-e2e-people, co-e2e-other");

    // Disable asks first; Cancel changes nothing.
    await row.getByRole("button", { name: "Disable" }).click();
    const dialog = page.getByRole("alertdialog", { name: `Disable ${email}?` });
    await expect(dialog).toContainText("every session they have open ends at once");
    await expectAccessible(page);
    await dialog.getByRole("button", { name: "Cancel" }).click();
    await expect(row.getByTestId("person-status")).toHaveText("active");
    await row.getByRole("button", { name: "Disable" }).click();
    await page.getByRole("alertdialog").getByRole("button", { name: "Disable now" }).click();
    await expect(row.getByTestId("person-status")).toHaveText("disabled");
    expect(await db.session.count({ where: { user: { email } } })).toBe(0);

    // Their open page's next request finds no session: back to sign-in, and the password no longer works.
    // The page's own poll may get there first; its redirect then aborts this reload (Chromium
    // says ERR_ABORTED, or that the reload's page is no longer attached when the redirect
    // replaced it). Either way the page must end at sign-in, which the next line asserts.
    await them.reload().catch((err: unknown) => {
      if (!/ERR_ABORTED|Not attached to an active page|interrupted by another navigation/.test(String(err))) throw err;
    });
    await expect(them).toHaveURL(/\/sign-in/);
    await resetSignInLimits(db);
    await signIn(them, "the first password");
    await expect(them.getByTestId("sign-in-error")).toContainText("this account is disabled");

    // Reset password: confirmed, shown once with a copy button.
    await row.getByRole("button", { name: "Reset password" }).click();
    await page.getByRole("alertdialog", { name: `Reset the password of ${email}?` }).getByRole("button", { name: "Reset password" }).click();
    const shown = panel.getByTestId("password-reset");
    await expect(shown).toContainText("It will not be shown again.");
    await expect(shown.getByRole("button", { name: "Copy" })).toBeVisible();
    const password = await shown.getByTestId("reset-password-value").inputValue();
    expect(password.length).toBeGreaterThanOrEqual(20);
    await screenshot(page, "users-password-reset");
    await shown.getByRole("button", { name: "Done" }).click();
    await expect(page.getByText(password)).toHaveCount(0);

    await row.getByRole("button", { name: "Enable" }).click();
    await expect(row.getByTestId("person-status")).toHaveText("active");
    await resetSignInLimits(db);
    await signIn(them, password);
    await expect(them.getByTestId("signed-in-as")).toContainText(email);
    await expect(them.getByTestId("signed-in-as")).toContainText("board");

    // Each change is in the audit log as the admin, without the password.
    const entries = await db.auditEntry.findMany({ where: { actor: ACCOUNTS.admin.email, action: { startsWith: "user." }, targetId: added.id } });
    expect(new Set(entries.map((e) => `${e.action}:${e.outcome}`))).toEqual(new Set(["user.update:ok", "user.disable:ok", "user.reset_password:ok", "user.enable:ok"]));
    expect(JSON.stringify(entries.map((e) => [e.input, e.detail]))).not.toContain(password);
  } finally {
    await resetSignInLimits(db);
    await adminContext.close();
    await personContext.close();
    await db.$disconnect();
  }
});
