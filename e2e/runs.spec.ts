import { expect, test } from "@playwright/test";
import fs from "node:fs";
import { describeFailure, safeDecide } from "../server/engine";
import { e2eDb } from "./db";
import { expectAccessible, rejectedRun, screenshot } from "./support";

const REJECTED = "native_provider_startup_rejected";

test("a run stopped by a startup rejection shows the plain reason, its proof's checks and Retry; a double click makes exactly one new run", async ({ page, baseURL }) => {
  const db = e2eDb();
  try {
    const run = await rejectedRun(db, baseURL, page.request);
    const entry = describeFailure(REJECTED)!;

    await page.goto(`/runs/${run.id}`);
    await expect(page.getByTestId("plain-reason")).toHaveText(entry.message);
    await expect(page.getByTestId("next-action")).toHaveText(`Next: ${entry.nextAction}`);
    const retry = page.getByRole("button", { name: "Retry", exact: true });
    await expect(retry).toBeEnabled();

    // Every check of the stored startup_failure proof, as recorded.
    const proof = await db.proof.findFirstOrThrow({ where: { runId: run.id, kind: "startup_failure" } });
    const checks = proof.checks as Array<{ name: string; ok: boolean }>;
    expect(checks.length).toBeGreaterThan(0);
    const card = page.locator('[data-testid="proof"][data-proof-kind="startup_failure"]').first();
    await expect(card).toContainText(proof.verdict);
    for (const c of checks) {
      await expect(card.locator(`tr[data-check="${c.name}"]`).first()).toContainText(c.ok ? "pass" : "fail");
    }
    await expect(page.getByTestId("timeline")).toContainText("startup_failed");
    await expect(page.getByTestId("leases")).toContainText("created");
    await expectAccessible(page);
    await screenshot(page, "run-detail");

    // Download evidence: every bundle is accepted by the engine with the recorded verdict.
    const [download] = await Promise.all([page.waitForEvent("download"), page.getByTestId("download-evidence").click()]);
    const bundles = JSON.parse(fs.readFileSync((await download.path())!, "utf8")) as unknown[];
    const stored = await db.proof.findMany({ where: { runId: run.id }, orderBy: [{ evaluatedAt: "asc" }, { id: "asc" }] });
    expect(bundles).toHaveLength(stored.length);
    bundles.forEach((b, i) => {
      const decided = safeDecide(b);
      expect(decided.ok).toBe(true);
      if (decided.ok) expect(decided.verdict.verdict).toBe(stored[i]!.verdict);
    });

    // Retry: a confirmation, then a double click on it — one successor, never two.
    await retry.click();
    const dialog = page.getByRole("alertdialog");
    await expect(dialog).toContainText("Retry this run?");
    await page.getByTestId("confirm-retry").dblclick();
    await expect(page.getByTestId("retry-successor")).toBeVisible();
    const successors = await db.run.findMany({ where: { previousRunId: run.id } });
    expect(successors).toHaveLength(1);
    await expect(page.getByTestId("retry-successor")).toContainText(successors[0]!.id);
    expect(await db.run.count({ where: { companyId: run.companyId, taskId: run.taskId } })).toBe(2);

    // The successor's page links back to this run.
    await page.getByTestId("retry-successor").getByRole("link").click();
    await expect(page.getByTestId("lineage")).toContainText(run.id.slice(0, 8));
  } finally {
    await db.$disconnect();
  }
});

test("the runs list: filters survive a reload, failure codes explain themselves, groups lead to their runs", async ({ page, baseURL }) => {
  const db = e2eDb();
  try {
    const run = await rejectedRun(db, baseURL, page.request);
    const entry = describeFailure(REJECTED)!;

    await page.goto("/runs");
    await expect(page.getByTestId("runs-table")).toBeVisible();
    await page.getByLabel("Status").selectOption("failed");
    await expect(page).toHaveURL(/status=failed/);
    await page.getByLabel("Company").fill(run.companyId);
    await page.getByLabel("Company").press("Enter");
    await expect(page).toHaveURL(new RegExp(`company=${run.companyId}`));
    const rows = page.getByTestId("runs-table").locator("tbody tr");
    await expect(rows).toHaveCount(1);
    await expect(rows.first()).toHaveAttribute("data-run-id", run.id);

    await page.reload();
    await expect(page.getByLabel("Status")).toHaveValue("failed");
    await expect(page.getByLabel("Company")).toHaveValue(run.companyId);
    await expect(rows).toHaveCount(1);
    await expect(rows.first()).toHaveAttribute("data-run-id", run.id);

    // Hovering the code shows the catalogue's plain sentence.
    await rows.first().getByTestId("failure-code").hover();
    await expect(page.getByRole("tooltip")).toContainText(entry.message);

    // A failure group is one click from its runs.
    await page.getByRole("button", { name: "Clear filters" }).click();
    await expect(page).not.toHaveURL(/status=/);
    const group = page.getByTestId("failure-groups").getByRole("link", { name: new RegExp(REJECTED) });
    await group.click();
    await expect(page).toHaveURL(new RegExp(`code=${REJECTED}`));
    await expect(page.getByLabel("Failure code")).toHaveValue(REJECTED);
    await expect(page.getByTestId("runs-table").locator("tbody tr").first()).toContainText(REJECTED);

    await page.getByRole("button", { name: "Clear filters" }).click();
    await expect(page.getByTestId("failure-groups")).toBeVisible();
    await expectAccessible(page);
    await screenshot(page, "runs");
  } finally {
    await db.$disconnect();
  }
});
