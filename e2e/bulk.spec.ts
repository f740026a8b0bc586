import crypto from "node:crypto";
import { expect, expectAccessible, hydrated, screenshot, tag, test, trpcQuery } from "./support";
import { e2eDb } from "./db";

const REJECTED = "native_provider_startup_rejected";

test("bulk Retry from a failure group: the preview lists admitted and refused runs, the typed word carries it out, each run once", async ({ page }) => {
  test.setTimeout(120_000);
  const db = e2eDb();
  try {
    const t = tag();
    const companyId = `co-e2e-bulk-${t}`;
    const { instanceId } = await trpcQuery<{ instanceId: string }>(page.request, "intents.list", {});
    await db.instance.upsert({ where: { id: instanceId }, create: { id: instanceId, name: instanceId }, update: {} });
    const base = { instanceId, companyId, agent: "planner", provider: "codex", target: "local" as const, sandboxMode: "warm" as const, status: "failed" as const, outcome: "terminal_failure" as const, failureCode: REJECTED, turnsPlanned: 1, finishedAt: new Date() };
    const admitted = Array.from({ length: 6 }, (_, i) => ({ ...base, id: crypto.randomUUID(), taskId: `bulk-${t}-${i}`, canRetry: true }));
    // Same code, but this run was not offered Retry: the preview refuses it, with the reason.
    const notOffered = { ...base, id: crypto.randomUUID(), taskId: `bulk-${t}-no-retry`, canRetry: false };
    await db.run.createMany({ data: [...admitted, notOffered] });
    const ids = [...admitted.map((r) => r.id), notOffered.id];

    await page.goto(`/runs?company=${companyId}`);
    const open = await hydrated(page.getByRole("button", { name: `Retry all 7 with ${REJECTED}` }));
    await open.click();
    const dialog = page.getByTestId("bulk-dialog");
    await expect(dialog.getByTestId("bulk-preview-counts")).toContainText("7 runs: 6 admitted, 1 refused");
    await expect(dialog.locator('[data-testid="bulk-item"][data-admitted="true"]')).toHaveCount(6);
    await expect(dialog.locator('[data-testid="bulk-item"][data-admitted="false"]')).toContainText("refused");
    // The preview touched nothing.
    expect(await db.run.count({ where: { previousRunId: { in: ids } } })).toBe(0);
    await expectAccessible(page);
    await screenshot(page, "bulk-retry-preview");

    const confirm = dialog.getByTestId("bulk-confirm");
    await expect(confirm).toBeDisabled();
    await dialog.getByTestId("bulk-confirm-input").fill("retry 7");
    await expect(confirm).toBeDisabled();
    await dialog.getByTestId("bulk-confirm-input").fill("retry 6");
    await confirm.dblclick();
    await expect(dialog.getByTestId("bulk-results")).toContainText("6 retried");
    await expect(dialog.locator('[data-testid="bulk-item"][data-result="retried"]')).toHaveCount(6);
    await screenshot(page, "bulk-retry-results");

    const successors = await db.run.findMany({ where: { previousRunId: { in: ids } }, select: { previousRunId: true } });
    expect(successors).toHaveLength(6);
    expect(new Set(successors.map((s) => s.previousRunId))).toEqual(new Set(admitted.map((r) => r.id)));
    const entry = await db.auditEntry.findFirstOrThrow({ where: { action: "run.bulk_retry", outcome: "ok", companyId } });
    expect((entry.detail as { runs: unknown[] }).runs).toHaveLength(7);

    await dialog.getByRole("button", { name: "Close" }).click();
    await expect(dialog).toHaveCount(0);
  } finally {
    await db.$disconnect();
  }
});

test("bulk Cancel from the runs list's filter: why, the preview, the typed word, each run cancelled once with who and why", async ({ page }) => {
  const db = e2eDb();
  try {
    const t = tag();
    const companyId = `co-e2e-bulk-cancel-${t}`;
    // Another instance's queued runs: no controller of this product claims them while the test looks.
    const instanceId = `inst-e2e-bulk-${t}`;
    await db.instance.create({ data: { id: instanceId, name: instanceId } });
    const base = { instanceId, companyId, agent: "planner", provider: "codex", target: "remote" as const, sandboxMode: "warm" as const };
    const queued = Array.from({ length: 3 }, (_, i) => ({ ...base, id: crypto.randomUUID(), taskId: `bulk-cancel-${t}-${i}`, status: "queued" as const }));
    const ended = { ...base, id: crypto.randomUUID(), taskId: `bulk-cancel-${t}-ended`, status: "succeeded" as const, finishedAt: new Date() };
    await db.run.createMany({ data: [...queued, ended] });

    await page.goto(`/runs?company=${companyId}`);
    await (await hydrated(page.getByRole("button", { name: "Cancel these…" }))).click();
    const dialog = page.getByTestId("bulk-dialog");
    await dialog.getByLabel("Why (optional, kept on each run)").fill("wrong prompt in the wave");
    await dialog.getByTestId("bulk-preview").click();
    await expect(dialog.getByTestId("bulk-preview-counts")).toContainText("4 runs: 3 admitted, 1 refused");
    await expect(dialog.locator('[data-testid="bulk-item"][data-admitted="false"]')).toContainText("already ended");
    expect(await db.run.count({ where: { id: { in: queued.map((r) => r.id) }, status: "queued" } })).toBe(3);

    await dialog.getByTestId("bulk-confirm-input").fill("cancel 3");
    await dialog.getByTestId("bulk-confirm").click();
    await expect(dialog.getByTestId("bulk-results")).toContainText("3 cancelled");
    await screenshot(page, "bulk-cancel-results");
    const runs = await db.run.findMany({ where: { id: { in: queued.map((r) => r.id) } } });
    expect(runs.map((r) => [r.status, r.cancelReason])).toEqual(queued.map(() => ["cancelled", "wrong prompt in the wave"]));
    expect((await db.run.findUniqueOrThrow({ where: { id: ended.id } })).status).toBe("succeeded");
  } finally {
    await db.$disconnect();
  }
});
