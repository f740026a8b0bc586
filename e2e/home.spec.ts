import { expect, test } from "@playwright/test";
import { e2eDb } from "./db";

test("the home page shows run counts read from PostgreSQL through tRPC", async ({ page }) => {
  const db = e2eDb();
  try {
    await db.instance.upsert({ where: { id: "inst-e2e" }, create: { id: "inst-e2e", name: "e2e" }, update: {} });
    const base = { instanceId: "inst-e2e", companyId: "co-e2e", agent: "planner", provider: "codex", target: "remote" as const, sandboxMode: "per_turn" as const };
    const tag = Date.now().toString(36);
    await db.run.createMany({
      data: [
        { ...base, taskId: `home-${tag}-1`, status: "running" },
        { ...base, taskId: `home-${tag}-2`, status: "failed", outcome: "terminal_failure" },
      ],
    });
    const expected = await db.run.groupBy({ by: ["status"], _count: { _all: true } });
    const total = expected.reduce((n, r) => n + r._count._all, 0);

    await page.goto("/");
    await expect(page.getByRole("heading", { name: "Overview" })).toBeVisible();
    await expect(page.getByTestId("runs-total")).toHaveText(`${total} runs in all.`);
    for (const row of expected) {
      await expect(page.getByTestId(`count-${row.status}`)).toContainText(String(row._count._all));
    }
    await page.screenshot({ path: "e2e/screenshots/home.png", fullPage: true });
  } finally {
    await db.$disconnect();
  }
});
