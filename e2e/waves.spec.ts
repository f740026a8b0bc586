import { axeAnalyze, expect, test } from "./support";
import { spawn } from "node:child_process";
import path from "node:path";
import { childEnv, env } from "../server/env";
import { loadWaveReport } from "../server/waves/store";
import type { WaveReport } from "../server/shared/wave-report";
import { e2eDb } from "./db";

/**
 * A real (small) wave against the running product's database and emulator, then the
 * waves list, its grid, and a comparison with a variant of it imported through the page.
 */

test.describe.configure({ mode: "serial" });
let report: WaveReport;

function runWave(seed: number): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(
      process.execPath,
      ["--import", "tsx", path.resolve("scripts/wave.ts"), "--seed", String(seed), "--tasks", "2", "--kills", "K1", "--faults", "reject", "--concurrency", "2", "--timeout", "90"],
      { env: childEnv({ DATABASE_URL: env.E2E_DATABASE_URL, EMULATOR_URL: `http://127.0.0.1:${env.E2E_PORT + 700}` }), stdio: "inherit" },
    );
    child.on("exit", (code) => resolve(code ?? 1));
  });
}

async function axe(page: import("@playwright/test").Page) {
  const results = await axeAnalyze(page);
  const serious = results.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  expect(serious.map((v) => `${v.id}: ${v.help}`)).toEqual([]);
}

test.beforeAll(async () => {
  test.setTimeout(150_000);
  expect(await runWave(4242)).toBe(0);
  const db = e2eDb();
  try {
    const wave = await db.chaosWave.findFirstOrThrow({ where: { seed: 4242 }, orderBy: { startedAt: "desc" } });
    report = await loadWaveReport(db, wave.id);
  } finally {
    await db.$disconnect();
  }
});

test("the waves list shows the wave with its pass count", async ({ page }) => {
  await page.goto("/waves");
  const row = page.locator(`tr[data-wave="${report.id}"]`);
  await expect(row).toContainText(`${report.tasks.filter((t) => t.passed).length}/${report.tasks.length}`);
  await expect(row).toContainText("passed");
  await axe(page);
  await page.screenshot({ path: "e2e/screenshots/waves.png", fullPage: true });
});

test("a wave's grid opens each cell's evidence, with its timeline", async ({ page }) => {
  await page.goto(`/waves/${report.id}`);
  await expect(page.getByTestId("wave-grid")).toBeVisible();
  // R1–R7 (a report without R7 shows it as "not run", no button).
  await expect(page.locator("button[data-cell]")).toHaveCount(report.tasks.reduce((n, t) => n + Object.values(t.checks).filter(Boolean).length, 0));
  await page.locator("button[data-cell='t01-R3']").click();
  const dialog = page.getByRole("dialog");
  await expect(dialog).toContainText("R3 single execution: pass");
  await expect(dialog).toContainText(report.tasks[0]!.checks.R3.detail ?? "");
  await page.keyboard.press("Escape");
  await expect(page.getByRole("figure", { name: "Wave timeline" })).toBeVisible();
  await expect(page.getByTestId("wave-codes")).toContainText("native_provider_startup_rejected");
  await axe(page);
  await page.screenshot({ path: "e2e/screenshots/wave.png", fullPage: true });
});

test("an imported variant compares against it: pass rates, the changed check, codes", async ({ page }) => {
  // The same wave "before a fix": t01 failed R2 there.
  const before: WaveReport = structuredClone(report);
  before.id = report.id.replace(/T\d{6}/, "T000001");
  before.tasks[0]!.checks.R2 = { ok: false, detail: "lease_binding recorded refused, the rules give admitted" };
  before.tasks[0]!.passed = false;
  before.tasks[0]!.failureCodes = ["native_runner_staged_attachment_recovery_unproven"];
  before.passed = false;
  // A task only the "before" wave ran: summarised in one line, not one "absent" per check.
  before.tasks.push({ ...structuredClone(report.tasks[1]!), id: "t99" });

  await page.goto("/waves");
  const importer = page.getByRole("region", { name: "Import a report" });
  await importer.getByLabel("Wave report (JSON)").setInputFiles({ name: "before.json", mimeType: "application/json", buffer: Buffer.from(JSON.stringify(before)) });
  await expect(importer.getByText(`Imported ${before.id} (${before.tasks.length} tasks, failed)`)).toBeVisible();
  // A second upload of the same report is refused with the reason.
  await importer.getByLabel("Wave report (JSON)").setInputFiles({ name: "again.json", mimeType: "application/json", buffer: Buffer.from(JSON.stringify(before)) });
  await expect(importer.getByRole("alert")).toContainText("already stored");

  await page.goto("/waves");
  await page.getByLabel(`Select ${before.id} for comparison`).check();
  await page.getByLabel(`Select ${report.id} for comparison`).check();
  await page.getByRole("link", { name: "Compare the two selected waves" }).click();
  const total = report.tasks.length;
  await expect(page.getByTestId("compare-headline")).toContainText(`${total} of ${total + 1} before, ${total} of ${total} after`);
  await expect(page.getByTestId("compare-changed")).toContainText("t01 R2 self-healed");
  await expect(page.getByTestId("compare-only-a")).toHaveText(`1 task only in ${before.id} (absent after): t99`);
  await expect(page.getByTestId("compare-changed")).not.toContainText("absent →");
  await expect(page.getByTestId("compare-changed")).not.toContainText("→ absent");
  // Wave ids are shown as they are spelled, never upper-cased by the table's header style.
  const header = page.getByRole("columnheader", { name: before.id });
  await expect(header).toBeVisible();
  await expect(header).toHaveCSS("text-transform", "none");
  await expect(page.getByTestId("compare-codes")).toContainText("native_runner_staged_attachment_recovery_unproven");
  await page.reload();
  await expect(page.getByTestId("compare-changed")).toContainText("t01 R2");
  await axe(page);
  await page.screenshot({ path: "e2e/screenshots/waves-compare.png", fullPage: true });
});
