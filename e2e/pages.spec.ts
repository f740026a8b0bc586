import { expect, test } from "@playwright/test";
import { e2eDb } from "./db";
import { expectAccessible } from "./support";

test("every page is accessible (axe: no serious or critical violation, light and dark) and errors are shown, not blank", async ({ page }) => {
  const db = e2eDb();
  try {
    const anyRun = await db.run.findFirst({ orderBy: { createdAt: "desc" } });
    const pages = ["/", "/runs", "/intents", "/orphans", "/evidence", "/waves", "/audit", "/users", ...(anyRun ? [`/runs/${anyRun.id}`] : [])];
    for (const path of pages) {
      await page.goto(path);
      await expect(page.getByRole("heading", { level: 1 })).toBeVisible();
      await expect(page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Runs" })).toBeVisible();
      await expectAccessible(page);
    }

    // A run that does not exist is a not-found page; a bad filter shows the server's message.
    await page.goto("/runs/00000000-0000-4000-8000-000000000000");
    await expect(page.getByRole("heading", { name: "Not found" })).toBeVisible();
    await page.goto("/runs?from=2030-01-02T00:00:00.000Z&to=2030-01-01T00:00:00.000Z");
    await expect(page.getByRole("alert").filter({ hasText: "createdTo: must not be before createdFrom" }).first()).toBeVisible();
    await expectAccessible(page);
  } finally {
    await db.$disconnect();
  }
});
