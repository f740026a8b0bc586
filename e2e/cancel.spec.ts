import { ACCOUNTS, BOARD_COMPANY, stateFile } from "./accounts";
import { e2eDb } from "./db";
import { emulatorSandboxes, eventually, expect, expectAccessible, hydrated, screenshot, tag, test, trpcMutation } from "./support";

/**
 * Cancel from the run page (docs/rules.md §2.11): a board member cancels their company's run in
 * the middle of a turn, with a reason; the page says who and why, the sandbox is destroyed at
 * the provider, Cancel is gone and Retry is offered; Retry makes the one successor. A viewer
 * sees Cancel disabled with the reason.
 */
test("a board member cancels a run mid-turn from its page, then retries it", async ({ page, browser, baseURL }) => {
  const db = e2eDb();
  const context = await browser.newContext({ storageState: stateFile("board") });
  const viewerContext = await browser.newContext({ storageState: stateFile("viewer") });
  try {
    const taskId = `task-cancel-${tag()}`;
    // The operator submits (runs.create needs the operator role); the agent's turn takes its time.
    const run = await trpcMutation<{ id: string }>(page.request, "runs.create", {
      companyId: BOARD_COMPANY,
      taskId,
      agent: "planner",
      provider: "codex",
      target: "remote",
      sandboxMode: "warm",
      turns: 2,
      agentCommand: "sleep 600",
    });
    const lease = await eventually("a turn in flight", async () => {
      const r = await db.run.findUniqueOrThrow({ where: { id: run.id } });
      if (r.status !== "running" || r.phase !== "session_open") return null;
      return db.environmentLease.findFirst({ where: { runId: run.id, status: "active", providerLeaseId: { not: null } } });
    });

    // A viewer sees the button, disabled, with the reason.
    const viewer = await viewerContext.newPage();
    await viewer.goto(`/runs/${run.id}`);
    const viewerCancel = viewer.getByRole("button", { name: "Cancel run" });
    await expect(viewerCancel).toBeDisabled();
    await expect(viewer.getByTestId("cancel-refusal")).toHaveText("Your role (viewer) cannot Cancel; ask a board member or an operator");

    const board = await context.newPage();
    await board.goto(`/runs/${run.id}`);
    await expect(board.getByTestId("plain-reason")).toContainText("The agent is working");
    await (await hydrated(board.getByRole("button", { name: "Cancel run" }))).click();
    const dialog = board.getByRole("alertdialog", { name: "Cancel this run?" });
    await expect(dialog).toBeVisible();
    await dialog.getByLabel(/Reason/).fill("wrong prompt");
    await expectAccessible(board);
    await screenshot(board, "cancel-dialog");
    await board.getByTestId("confirm-cancel").click();

    await expect(board.getByTestId("plain-reason")).toHaveText(`Cancelled by ${ACCOUNTS.board.email}: wrong prompt`);
    await expect(board.getByText(`Run ${run.id.slice(0, 8)} cancelled.`)).toBeVisible();
    await expect(board.getByRole("button", { name: "Cancel run" })).toHaveCount(0);
    const cancelled = await db.run.findUniqueOrThrow({ where: { id: run.id } });
    expect(cancelled).toMatchObject({ status: "cancelled", cancelledBy: ACCOUNTS.board.email, cancelReason: "wrong prompt" });
    const box = (await emulatorSandboxes(baseURL)).find((s) => s.id === lease.providerLeaseId);
    expect(box?.state).toMatch(/^destroy(ing|ed)$/);
    expect(await db.auditEntry.findFirstOrThrow({ where: { action: "run.cancel", targetId: run.id } })).toMatchObject({ actor: ACCOUNTS.board.email, outcome: "ok", companyId: BOARD_COMPANY });
    await screenshot(board, "run-cancelled");

    // Retry is offered on a cancelled run, and makes its one successor.
    await board.getByRole("button", { name: "Retry", exact: true }).click();
    await board.getByTestId("confirm-retry").click();
    await expect(board.getByTestId("retry-successor")).toBeVisible();
    const successor = await db.run.findFirstOrThrow({ where: { previousRunId: run.id } });
    await expect(board.getByTestId("retry-successor")).toContainText(successor.id);
    expect(await db.run.count({ where: { previousRunId: run.id } })).toBe(1);
    // Not left running for the other specs: the successor is cancelled in its turn (through the API).
    await trpcMutation(page.request, "runs.cancel", { runId: successor.id, reason: "e2e cleanup" });
  } finally {
    await context.close();
    await viewerContext.close();
    await db.$disconnect();
  }
});
