import crypto from "node:crypto";
import { expect, expectAccessible, hydrated, rejectedRun, screenshot, tag, test } from "./support";
import { e2eDb } from "./db";

/**
 * Stuck runs (docs/rules.md §4): the overview's card with counts per reason, each a link to the runs
 * list under that filter; the list says why each run is stuck and links the proof behind it.
 * The stuck rows belong to an instance of their own, so the product's controller leaves them be.
 */
test("the overview's stuck-runs card and the runs list's stuck filter: every reason shown, each linked to its proof or the timeline", async ({ page }) => {
  test.setTimeout(120_000);
  const db = e2eDb();
  try {
    const t = tag();
    const instanceId = `inst-e2e-stuck-${t}`;
    const companyId = `co-e2e-stuck-${t}`;
    const ago = (ms: number) => new Date(Date.now() - ms);
    await db.instance.create({ data: { id: instanceId, name: instanceId } });
    // A controller of that instance that stopped heartbeating ten minutes ago (another host, stalled).
    const silentBoot = `e2e-silent-${t}`;
    await db.controllerProcess.create({ data: { bootId: silentBoot, instanceId, pid: 999_999, startedAt: ago(3_600_000), hostname: "elsewhere", pidSpace: "pid:[1]", lastSeenAt: ago(600_000) } });
    const base = { instanceId, companyId, agent: "planner", provider: "codex", target: "remote" as const, sandboxMode: "warm" as const };
    const run = (taskId: string, data: Record<string, unknown>) => db.run.create({ data: { ...base, taskId: `${taskId}-${t}`, ...data } });
    const proof = (runId: string, verdict: string, evidence: Record<string, unknown>) =>
      db.proof.create({ data: { runId, kind: "recovery_attempt", verdict, reason: verdict === "wait" ? "provider_unavailable" : "attempts_left", checks: [], evidence: { kind: "recovery_attempt", ...evidence }, output: { verdict }, evaluatedBy: silentBoot } });

    const waiting = await run("waits", { status: "suspended", phase: "session_open", providerWaitSince: ago(180_000), recoveryNotBefore: new Date(Date.now() + 30_000) });
    const waitProof = await proof(waiting.id, "wait", { lastError: "connect ECONNREFUSED" });
    const backingOff = await run("backs-off", { status: "running", phase: "session_open", recoveryAttempts: 2, recoveryNotBefore: new Date(Date.now() + 600_000), recoveryErrors: ["sandbox answered garbage", "runner state unreadable"] });
    const counted = await proof(backingOff.id, "try_again", { attempts: 2 });
    // Silent executor and a turn far past its maximum: two reasons on one run.
    const silent = await run("silent", { status: "running", phase: "session_open", turnsDone: 1, turnsPlanned: 3, executorBootId: silentBoot, lastRunnerStateAt: ago(3 * 3_600_000) });
    const old = await run("old", { status: "queued", createdAt: ago(2 * 86_400_000) });

    await page.goto("/");
    const card = page.getByTestId("attention-stuck");
    await expect(card).toHaveAttribute("data-attention", "yes");
    for (const reason of ["provider_wait", "recovery_backoff", "executor_silent", "over_age", "turn_overdue"]) {
      await expect(card.locator(`[data-testid="stuck-group"][data-reason="${reason}"]`)).toHaveAttribute("href", `/runs?stuck=${reason}`);
    }

    await screenshot(page, "stuck-overview");

    // From the card to the list filtered for one reason, then narrowed to this test's company.
    await (await hydrated(card.locator('[data-testid="stuck-group"][data-reason="executor_silent"]'))).click();
    await expect(page).toHaveURL(/stuck=executor_silent/);
    await page.goto(`/runs?stuck=any&company=${companyId}`);
    const table = page.getByTestId("stuck-table");
    await expect(table.locator("tr[data-run-id]")).toHaveCount(4);
    await expect(page.getByTestId("stuck-count")).toHaveText("4 stuck runs match");
    const row = (id: string) => table.locator(`tr[data-run-id="${id}"]`);
    const reasons = (id: string) => row(id).getByTestId("stuck-reason");
    await expect(reasons(silent.id)).toHaveCount(2);
    await expect(row(silent.id).locator('[data-reason="executor_silent"]')).toContainText("last seen");
    await expect(row(silent.id).locator('[data-reason="executor_silent"]')).toContainText("no proof yet: its timeline");
    await expect(row(silent.id).locator('[data-reason="turn_overdue"]')).toContainText("Turn 2 running since");
    await expect(row(backingOff.id).locator('[data-reason="recovery_backoff"]')).toContainText("Recovery attempt 2 of");
    await expect(row(backingOff.id).locator('[data-reason="recovery_backoff"]')).toContainText("runner state unreadable");
    await expect(row(backingOff.id).getByTestId("stuck-proof")).toHaveAttribute("href", `/runs/${backingOff.id}#proof-${counted.id}`);
    await expect(row(waiting.id).getByTestId("stuck-proof")).toHaveAttribute("href", `/runs/${waiting.id}#proof-${waitProof.id}`);
    await expect(row(old.id).locator('[data-reason="over_age"]')).toContainText("past the maximum age of 12 h");
    await expectAccessible(page);
    await screenshot(page, "stuck-runs");

    // The filter itself: one reason, in the address.
    await (await hydrated(page.locator("#f-stuck"))).selectOption("recovery_backoff");
    await expect(page).toHaveURL(/stuck=recovery_backoff/);
    await expect(table.locator("tr[data-run-id]")).toHaveCount(1);
    await expect(page.getByTestId("stuck-count")).toHaveText("1 stuck run match");

    // The proof link lands on that proof on the run's page.
    await row(backingOff.id).getByTestId("stuck-proof").click();
    await expect(page).toHaveURL(new RegExp(`/runs/${backingOff.id}#proof-${counted.id}$`));
    await expect(page.locator(`#proof-${counted.id}`)).toBeVisible();
  } finally {
    await db.$disconnect();
  }
});

test("the run page shows the idle policy its sandbox was created with", async ({ page, baseURL }) => {
  test.setTimeout(90_000);
  const db = e2eDb();
  try {
    const run = await rejectedRun(db, baseURL, page.request, `co-e2e-idle-${crypto.randomUUID().slice(0, 8)}`);
    const lease = await db.environmentLease.findFirstOrThrow({ where: { runId: run.id } });
    expect(lease.autoStopMinutes).toBeGreaterThan(0);
    await page.goto(`/runs/${run.id}`);
    const cell = page.getByTestId("idle-policy").first();
    await expect(cell).toContainText(`stops after`);
    await expect(cell).toContainText(`idle`);
    await expect(cell).toContainText("deleted 24 h after it stops");
  } finally {
    await db.$disconnect();
  }
});
