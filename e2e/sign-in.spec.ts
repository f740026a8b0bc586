import { expect, expectAccessible, hydrated, screenshot, test } from "./support";
import type { Page } from "@playwright/test";
import { ACCOUNTS, resetSignInLimits, stateFile, type Who } from "./accounts";
import { e2eDb } from "./db";

/** Signed out: these tests sign in through the page themselves. */
test.use({ storageState: { cookies: [], origins: [] } });

const operator = ACCOUNTS.operator;

/** Submits the form and waits for the server's answer (the message may be the same as the last one). */
async function submit(page: Page, email: string, password: string) {
  // A form filled before React hydrated it is reset by the hydration, and its Enter goes nowhere
  // (seen under load, after the page was sent back to sign-in by a poll).
  await hydrated(page.getByLabel("Password"));
  await page.getByLabel("Email").fill(email);
  await page.getByLabel("Password").fill(password);
  await Promise.all([page.waitForResponse((r) => r.url().endsWith("/api/auth/sign-in/email")), page.getByLabel("Password").press("Enter")]);
}

test("every page sends a signed-out visitor to sign-in; a wrong password stays there with the reason; the right one lands on ?next=; an ended session sends the open page back to sign-in; sign out locks the console again", async ({ page }) => {
  const db = e2eDb();
  try {
    await resetSignInLimits(db);

    // The server redirects (not a page that loads and then moves), remembering the page.
    const direct = await page.request.get("/runs?status=failed", { maxRedirects: 0 });
    expect(direct.status()).toBe(307);
    expect(direct.headers().location).toBe("/sign-in?next=%2Fruns%3Fstatus%3Dfailed");
    expect((await page.request.get("/api/trpc/me.get")).status()).toBe(401);

    await page.goto("/runs?status=failed");
    await expect(page).toHaveURL(/\/sign-in\?next=%2Fruns%3Fstatus%3Dfailed$/);
    await expect(page.getByRole("heading", { level: 1, name: "Sign in" })).toBeVisible();
    await expect(page.getByText("Sign in to continue to /runs?status=failed.")).toBeVisible();
    await expect(page.getByRole("navigation", { name: "Main" })).toHaveCount(0);
    await expectAccessible(page);
    await screenshot(page, "sign-in");

    // Keyboard only: the fields are reachable in order and Enter submits.
    await page.keyboard.press("Tab");
    await page.keyboard.press("Tab");
    await expect(page.getByLabel("Email")).toBeFocused();
    await page.keyboard.type(operator.email);
    await page.keyboard.press("Tab");
    await expect(page.getByLabel("Password")).toBeFocused();
    await page.keyboard.type("not the password");
    await Promise.all([page.waitForResponse((r) => r.url().endsWith("/api/auth/sign-in/email")), page.keyboard.press("Enter")]);
    await expect(page.getByTestId("sign-in-error")).toHaveText("Wrong email or password.");
    await expect(page.getByTestId("sign-in-error")).toHaveAttribute("role", "alert");
    await expect(page).toHaveURL(/\/sign-in\?next=%2Fruns%3Fstatus%3Dfailed$/);
    await expect(page.getByLabel("Password")).toBeFocused();
    await expect(page.getByLabel("Password")).toHaveValue("");
    await expectAccessible(page);

    await submit(page, operator.email, operator.password);
    await expect(page).toHaveURL(/\/runs\?status=failed$/);
    await expect(page.getByLabel("Status")).toHaveValue("failed");
    const me = page.getByTestId("signed-in-as");
    await expect(me).toContainText(operator.email);
    await expect(me).toContainText("operator");
    await expect(me).toContainText("all companies");

    // The session ends while the page is open (expired, revoked): the next poll notices,
    // and the page goes to sign-in, remembering where it was. (Only this test's session.)
    const cookie = (await page.context().cookies()).find((c) => c.name === "runwarden.session_token");
    const token = decodeURIComponent(cookie?.value ?? "").split(".")[0] ?? "";
    expect((await db.session.deleteMany({ where: { token } })).count).toBe(1);
    await expect(page).toHaveURL(/\/sign-in\?next=%2Fruns%3Fstatus%3Dfailed$/);
    await submit(page, operator.email, operator.password);
    await expect(page).toHaveURL(/\/runs\?status=failed$/);

    await me.getByRole("button", { name: "Sign out" }).click();
    await expect(page).toHaveURL(/\/sign-in$/);
    for (const [path, next] of [
      ["/", null],
      ["/audit", "%2Faudit"],
      ["/runs", "%2Fruns"],
    ] as const) {
      await page.goto(path);
      await expect(page).toHaveURL(next ? new RegExp(`/sign-in\\?next=${next}$`) : /\/sign-in$/);
    }
    // The session ended on the server, not only in this browser.
    expect((await page.request.get("/api/trpc/me.get")).status()).toBe(401);
  } finally {
    await resetSignInLimits(db);
    await db.$disconnect();
  }
});

test("?next= leads only within the site, and wrong guesses do not hold out the owner's own browser", async ({ page }) => {
  const db = e2eDb();
  try {
    await resetSignInLimits(db);
    await page.goto(`/sign-in?next=${encodeURIComponent("https://evil.example/steal")}`);
    await expect(page.getByText("Sign in to the Runwarden console.")).toBeVisible();
    await submit(page, operator.email, operator.password);
    await expect(page).toHaveURL(/^http:\/\/127\.0\.0\.1:\d+\/$/);
    await expect(page.getByRole("heading", { name: "Overview" })).toBeVisible();
    // Signed in already: the sign-in page moves on by itself.
    await page.goto("/sign-in?next=%2Fwaves");
    await expect(page).toHaveURL(/\/waves$/);
    await page.getByRole("button", { name: "Sign out" }).click();
    await expect(page).toHaveURL(/\/sign-in$/);

    // Wrong guesses are slowed per account and address (docs/access.md; back-off tested in
    // server/auth/auth.int.test.ts), but this browser signed in before: its owner gets in.
    for (let i = 0; i < 4; i++) {
      await submit(page, operator.email, `wrong ${i}`);
      await expect(page.getByTestId("sign-in-error")).toHaveText("Wrong email or password.");
    }
    await submit(page, operator.email, operator.password);
    await expect(page.getByRole("heading", { name: "Overview" })).toBeVisible();
  } finally {
    await resetSignInLimits(db);
    await db.$disconnect();
  }
});

// The sessions global-setup.ts signed in (one per role, without the page) are the ones every
// other spec runs as: each shows its person and role in the page's header.
for (const who of Object.keys(ACCOUNTS) as Who[]) {
  test(`the kept session of the ${who} shows who is signed in, with the role`, async ({ browser }) => {
    const context = await browser.newContext({ storageState: stateFile(who) });
    try {
      const page = await context.newPage();
      await page.goto("/");
      await expect(page).toHaveURL(/\/$/);
      await expect(page.getByTestId("signed-in-as")).toContainText(ACCOUNTS[who].email);
      await expect(page.getByTestId("signed-in-as")).toContainText(ACCOUNTS[who].role);
    } finally {
      await context.close();
    }
  });
}
