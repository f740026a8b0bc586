import { expect, test as setup } from "@playwright/test";
import { ACCOUNTS, resetSignInLimits, stateFile, type Who } from "./accounts";
import { e2eDb } from "./db";

/** Signs each test account in through the sign-in page once and keeps its cookies. */

setup.beforeAll(async () => {
  const db = e2eDb();
  try {
    await resetSignInLimits(db);
  } finally {
    await db.$disconnect();
  }
});

for (const who of Object.keys(ACCOUNTS) as Who[]) {
  const account = ACCOUNTS[who];
  setup(`sign in as ${who}`, async ({ page }) => {
    await page.goto("/sign-in");
    await page.getByLabel("Email").fill(account.email);
    await page.getByLabel("Password").fill(account.password);
    await page.getByRole("button", { name: "Sign in" }).click();
    await expect(page).toHaveURL(/\/$/);
    await expect(page.getByTestId("signed-in-as")).toContainText(account.email);
    await expect(page.getByTestId("signed-in-as")).toContainText(account.role);
    await page.context().storageState({ path: stateFile(who) });
  });
}
