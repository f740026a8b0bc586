import { eventually, expect, expectAccessible, rejectedRun, screenshot, tag, test } from "./support";
import fs from "node:fs";
import { describeFailure, judgeProcessExit, safeDecide } from "../server/engine";
import { e2eDb } from "./db";

const REJECTED = "native_provider_startup_rejected";

test("a run stopped by a startup rejection shows the plain reason, its proof's checks and Retry; a double click makes exactly one new run", async ({ page, baseURL }) => {
  // Two real start-ups fail through the controller (the run's and its successor's), two axe
  // passes in two colour schemes: 60 s ran out twice on a loaded machine (load 9–17), never quiet.
  test.setTimeout(120_000);
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
    for (const [i, c] of checks.entries()) {
      const row = card.locator(`tr[data-check="${c.name}"]`).first();
      await expect(row).toContainText(c.ok ? "yes" : "no");
      await expect(row).toHaveAttribute("data-reading", i === checks.length - 1 ? "decided" : "went_on");
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

    // The old run follows its successor, live: which run, its status and code; this run's own
    // "then Retry" gives way (the provider rejects the successor too: the fault stays).
    const successor = successors[0]!;
    await eventually("the successor's rejection", async () => (await db.run.findUniqueOrThrow({ where: { id: successor.id } })).status === "failed");
    await expect(page.getByTestId("successor-status")).toContainText("failed");
    await expect(page.getByTestId("successor-status")).toContainText(REJECTED);
    await expect(page.getByTestId("successor-reason")).toHaveText(entry.message);
    await expect(page.getByTestId("next-action")).toHaveCount(0);
    await expect(page.getByRole("button", { name: "Retry", exact: true })).toHaveCount(0);
    await expectAccessible(page);
    await screenshot(page, "run-retried");

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

    // The groups come in the server's first HTML, ahead of the list, not in a streamed segment
    // React reveals 300 ms after the first paint (the page's largest element: its LCP).
    const html = await (await page.request.get("/runs")).text();
    const groupsAt = html.indexOf('data-testid="failure-groups"');
    expect(groupsAt).toBeGreaterThan(-1);
    expect(groupsAt).toBeLessThan(html.indexOf("<tbody"));

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

test("a process_exit proof that proved a controller exited reads as the answer that proved it, not as a failure", async ({ page }) => {
  const db = e2eDb();
  try {
    const t = tag();
    const evidence = {
      kind: "process_exit" as const,
      record: { bootId: `b-old-${t}`, pid: 4242, startedAt: "2026-11-12T00:28:11.000Z", pidSpace: "ps-e2e" },
      observer: { bootId: `b-new-${t}`, pid: 5151, startedAt: "2026-11-12T01:08:00.412Z", pidSpace: "ps-e2e" },
      probe: { readable: true, pidLive: false },
    };
    const verdict = judgeProcessExit(evidence);
    expect(verdict).toMatchObject({ verdict: "exited", reason: "pid_gone" });
    await db.instance.upsert({ where: { id: "inst-e2e" }, create: { id: "inst-e2e", name: "e2e" }, update: {} });
    const run = await db.run.create({ data: { instanceId: "inst-e2e", companyId: "co-e2e", taskId: `exit-${t}`, agent: "planner", provider: "codex", target: "remote", sandboxMode: "warm", status: "suspended" } });
    await db.proof.create({ data: { kind: "process_exit", verdict: verdict.verdict, reason: verdict.reason, checks: verdict.checks, evidence, output: verdict, runId: run.id, evaluatedBy: `b-new-${t}` } });

    await page.goto(`/runs/${run.id}`);
    const card = page.locator('[data-testid="proof"][data-proof-kind="process_exit"]');
    const pidLive = card.locator('tr[data-check="pid_live"]');
    await expect(pidLive).toHaveAttribute("data-reading", "decided");
    await expect(pidLive).toContainText("no");
    await expect(pidLive).toContainText("→ exited (pid_gone)");
    await expect(card).not.toContainText("fail");
    for (const c of verdict.checks.slice(0, -1)) await expect(card.locator(`tr[data-check="${c.name}"]`)).toContainText("→ next check");
    await expectAccessible(page);
    await card.scrollIntoViewIfNeeded();
    await screenshot(page, "process-exit-proof");
  } finally {
    await db.$disconnect();
  }
});
