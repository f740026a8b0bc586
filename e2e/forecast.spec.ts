import { BOARD_COMPANY } from "./accounts";
import { e2eDb } from "./db";
import { eventually, expect, expectAccessible, hydrated, screenshot, tag, test, trpcMutation } from "./support";

/**
 * The restart forecast page (docs/rules.md §2.12): an operator takes a forecast with a run in the
 * middle of a turn; the forecast is stored and listed with its counts, the run's row says what
 * a restart would do (with its checks on expand), and the run page shows the line.
 */
test("an operator takes a forecast and sees the live run's prediction, on the page and the run's page", async ({ page }) => {
  test.setTimeout(120_000);
  const db = e2eDb();
  try {
    const run = await trpcMutation<{ id: string }>(page.request, "runs.create", {
      companyId: BOARD_COMPANY,
      taskId: `task-forecast-${tag()}`,
      agent: "planner",
      provider: "codex",
      target: "remote",
      sandboxMode: "warm",
      turns: 2,
      agentCommand: "sleep 600",
    });
    await eventually("a turn in flight", async () => {
      const r = await db.run.findUniqueOrThrow({ where: { id: run.id } });
      return r.status === "running" && r.phase === "session_open" ? r : null;
    });

    await page.goto("/");
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Forecast" }).click();
    await expect(page.getByRole("heading", { level: 1, name: "Restart forecast" })).toBeVisible();
    await (await hydrated(page.getByTestId("take-forecast"))).click();

    // The new forecast opens (its id in the address) and lists the run with its prediction.
    await expect(page).toHaveURL(/[?&]forecast=/);
    const row = page.locator(`[data-testid="forecast-runs"] tr[data-run-id="${run.id}"]`);
    await expect(row).toBeVisible({ timeout: 30_000 });
    await expect(row).toHaveAttribute("data-prediction", /^(continues|ends|operator)$/);
    await expect(row).toContainText("not restarted yet");
    await row.locator("summary").click();
    await expect(row.getByTestId("checks").first()).toBeVisible();
    const forecastId = new URL(page.url()).searchParams.get("forecast")!;
    const stored = await db.forecast.findUniqueOrThrow({ where: { id: forecastId }, include: { runs: true } });
    expect(stored).toMatchObject({ source: "console", takenRole: "operator" });
    expect(stored.runs.map((r) => r.runId)).toContain(run.id);
    expect(await db.auditEntry.count({ where: { action: "forecast.take", targetId: forecastId } })).toBe(1);
    await expect(page.locator(`[data-testid="forecasts"] tr[data-forecast-id="${forecastId}"]`)).toBeVisible();
    await expectAccessible(page);
    await screenshot(page, "forecast");

    // The prediction filter lives in the address.
    const prediction = (await row.getAttribute("data-prediction"))!;
    await page.getByLabel("Prediction").selectOption(prediction);
    await expect(page).toHaveURL(new RegExp(`[?&]prediction=${prediction}`));
    await expect(row).toBeVisible();

    await page.goto(`/runs/${run.id}`);
    await expect(page.getByTestId("run-forecast")).toContainText(prediction);
    await expect(page.getByTestId("run-forecast")).toContainText("not restarted yet");

    await trpcMutation(page.request, "runs.cancel", { runId: run.id, reason: "e2e forecast cleanup" });
  } finally {
    await db.$disconnect();
  }
});
