import { expect, rejectedRun, test } from "./support";
import crypto from "node:crypto";
import { ACCOUNTS, BOARD_COMPANY, stateFile } from "./accounts";
import { e2eDb } from "./db";

/** The server enforces every role; the UI explains it. */

test("a viewer sees Retry disabled with the reason; a forged Retry is FORBIDDEN, starts nothing, and is in the audit log", async ({ page, browser, baseURL }) => {
  const db = e2eDb();
  const context = await browser.newContext({ storageState: stateFile("viewer") });
  try {
    const run = await rejectedRun(db, baseURL, page.request);
    const viewer = await context.newPage();

    await viewer.goto(`/runs/${run.id}`);
    await expect(viewer.getByTestId("plain-reason")).toBeVisible();
    const reason = "Your role (viewer) cannot Retry; ask a board member or an operator";
    const retry = viewer.getByRole("button", { name: "Retry", exact: true });
    await expect(retry).toBeDisabled();
    await expect(retry).toHaveAccessibleDescription(reason);
    await expect(viewer.getByTestId("retry-refusal")).toHaveText(reason);
    await expect(viewer.getByTestId("signed-in-as")).toContainText(`${ACCOUNTS.viewer.email}`);

    // The button is only a courtesy: the same request made by hand is refused by the server.
    const forged = await viewer.evaluate(async (runId) => {
      const res = await fetch("/api/trpc/runs.retry?batch=1", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ 0: { json: { runId } } }),
      });
      return { status: res.status, body: (await res.json()) as Array<{ error?: { json: { message: string; data: { code: string } } } }> };
    }, run.id);
    expect(forged.status).toBe(403);
    expect(forged.body[0]?.error?.json.data.code).toBe("FORBIDDEN");
    expect(forged.body[0]?.error?.json.message).toBe("runs.retry needs the board role; you are signed in as viewer");
    expect(await db.run.count({ where: { previousRunId: run.id } })).toBe(0);
    expect(await db.run.count({ where: { companyId: run.companyId, taskId: run.taskId } })).toBe(1);

    // The refused attempt is in the audit log, with what was asked.
    const entry = await db.auditEntry.findFirstOrThrow({ where: { action: "runs.retry", outcome: "refused", actor: ACCOUNTS.viewer.email }, orderBy: { id: "desc" } });
    expect(entry.input).toEqual({ runId: run.id });
    await viewer.goto(`/audit?action=runs.retry&outcome=refused`);
    const row = viewer.locator(`tr[data-audit-id="${entry.id}"]`);
    await expect(row).toContainText(ACCOUNTS.viewer.email);
    await expect(row).toContainText("viewer");
    await expect(row).toContainText("refused");
    await expect(row).toContainText("needs board");
    await row.locator("summary").click();
    await expect(row.getByLabel(`Input of entry ${entry.id}`)).toContainText(run.id);

    // Every other guarded control says why, too.
    await viewer.goto("/intents");
    await expect(viewer.getByRole("button", { name: "Run sweep now" })).toBeDisabled();
    await expect(viewer.getByTestId("sweep-refusal")).toHaveText("Your role (viewer) cannot run the sweeps; ask an operator");
    await viewer.goto("/orphans");
    await expect(viewer.getByTestId("reclaim-refusal")).toHaveText("Your role (viewer) cannot reclaim sandboxes or run their dry run; ask an operator");
    await viewer.goto("/waves");
    await expect(viewer.getByLabel("Wave report (JSON)")).toBeDisabled();
    await expect(viewer.getByTestId("import-refusal")).toHaveText("Your role (viewer) cannot import wave reports; ask an operator");
    await expect(viewer.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Users" })).toHaveCount(0);
    await expect(viewer.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Audit" })).toBeVisible();
  } finally {
    await context.close();
    await db.$disconnect();
  }
});

test("a board member retries their company's run, and another company's run does not exist for them", async ({ page, browser, baseURL }) => {
  const db = e2eDb();
  const context = await browser.newContext({ storageState: stateFile("board") });
  try {
    const own = await rejectedRun(db, baseURL, page.request, BOARD_COMPANY, 1);
    const other = await rejectedRun(db, baseURL, page.request);
    const board = await context.newPage();

    await board.goto(`/runs/${own.id}`);
    await board.getByRole("button", { name: "Retry", exact: true }).click();
    await board.getByTestId("confirm-retry").click();
    await expect(board.getByTestId("retry-successor")).toBeVisible();
    const successor = await db.run.findFirstOrThrow({ where: { previousRunId: own.id } });
    await expect(board.getByTestId("retry-successor")).toContainText(successor.id);
    const retried = await db.auditEntry.findFirstOrThrow({ where: { action: "run.retry", targetId: own.id }, orderBy: { id: "desc" } });
    expect(retried).toMatchObject({ actor: ACCOUNTS.board.email, role: "board", companyId: BOARD_COMPANY, outcome: "ok" });

    // Another company's run reads as not found, by link or by guessing its id.
    await board.goto(`/runs/${other.id}`);
    await expect(board.getByRole("heading", { name: "Not found" })).toBeVisible();
    await board.goto(`/runs?company=${other.companyId}`);
    await expect(board.getByTestId("runs-count")).toHaveText("0 runs match");

    await board.goto("/intents");
    await expect(board.getByTestId("sweep-refusal")).toHaveText("Your role (board) cannot run the sweeps; ask an operator");
  } finally {
    await context.close();
    await db.$disconnect();
  }
});

test("a cross-site POST is refused with 403 before it reaches any procedure, and audited", async ({ page }) => {
  const db = e2eDb();
  try {
    const runId = crypto.randomUUID();
    const res = await page.request.post("/api/trpc/runs.retry?batch=1", {
      headers: { origin: "http://evil.example", "content-type": "application/json" },
      data: { 0: { json: { runId } } },
    });
    expect(res.status()).toBe(403);
    expect(await res.text()).toContain("cross-site request from http://evil.example refused");
    const entry = await db.auditEntry.findFirstOrThrow({ where: { action: "csrf.refused" }, orderBy: { id: "desc" } });
    expect(entry).toMatchObject({ actor: ACCOUNTS.operator.email, outcome: "refused", targetId: "/api/trpc/runs.retry", detail: { origin: "http://evil.example" } });

    // The same request from the dashboard's own origin reaches the procedure (and finds no such run).
    const same = await page.request.post("/api/trpc/runs.retry?batch=1", { headers: { "content-type": "application/json" }, data: { 0: { json: { runId } } } });
    expect(same.status()).toBe(404);

    await page.goto("/audit?action=csrf.refused");
    await expect(page.locator(`tr[data-audit-id="${entry.id}"]`)).toContainText("refused");
  } finally {
    await db.$disconnect();
  }
});
