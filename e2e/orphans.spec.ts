import { emulatorSandboxes, expect, expectAccessible, plant, screenshot, tag, test, trpcQuery } from "./support";
import { BOARD_COMPANY, stateFile } from "./accounts";
import { e2eDb } from "./db";

test("reclaiming orphans shows the dry run before anything is destroyed, then destroys only what was confirmed", async ({ page, baseURL }) => {
  const db = e2eDb();
  try {
    const t = tag();
    const { instanceId } = await trpcQuery<{ instanceId: string }>(page.request, "intents.list", {});
    const companyId = `co-e2e-orphans-${t}`;
    // The company is this instance's own: it has a finished run.
    await db.instance.upsert({ where: { id: instanceId }, create: { id: instanceId, name: instanceId }, update: {} });
    const run = await db.run.create({
      data: { instanceId, companyId, taskId: `orphan-task-${t}`, agent: "planner", provider: "codex", target: "remote", sandboxMode: "warm", status: "succeeded", finishedAt: new Date(Date.now() - 3 * 3600_000) },
    });
    const labels = { "runwarden.instance": instanceId, "runwarden.company": companyId };
    const left = await plant(baseURL, { name: `e2e-left-${t}`, labels: { ...labels, "runwarden.run": run.id }, cpu: 2, memory: 4, disk: 10, createdAt: new Date(Date.now() - 4 * 3600_000).toISOString() });
    const bare = await plant(baseURL, { name: `e2e-bare-${t}`, labels, createdAt: new Date(Date.now() - 1800_000).toISOString() });
    // Reclaimable needs a record of this instance naming the sandbox (§2.9): their ended leases.
    for (const [s, runId] of [[left, run.id], [bare, null]] as const) {
      await db.environmentLease.create({ data: { runId, instanceId, companyId, provider: "emulator", providerLeaseId: s.id, sandboxName: s.name, acquisitionOutcome: "created", status: "expired", endedAt: new Date() } });
    }
    // Our labels and no record: unrecorded, never in a batch.
    const unrecorded = await plant(baseURL, { name: `e2e-unrecorded-${t}`, labels });
    // A decoy naming a company this instance has never seen: foreign, never destroyed.
    const decoy = await plant(baseURL, { name: `e2e-decoy-${t}`, labels: { "runwarden.instance": instanceId, "runwarden.company": `co-nobody-${t}` }, cpu: 4 });

    await page.goto("/orphans");
    const table = page.getByTestId("orphans-table");
    // The page is as of its inventory: the sandboxes planted just now show once a pass has
    // listed them (one starts when the inventory is 5 s old; the page polls every 4 s).
    await expect(table.locator(`tr[data-sandbox-id="${left.id}"]`)).toContainText("reclaimable", { timeout: 30_000 });
    await expect(page.getByTestId("orphan-inventory")).toContainText("Provider listed");
    await expect(table.locator(`tr[data-sandbox-id="${decoy.id}"]`)).toContainText("foreign");
    await expect(table.locator(`tr[data-sandbox-id="${unrecorded.id}"]`)).toContainText("unrecorded");
    await expect(table.locator(`tr[data-sandbox-id="${left.id}"]`)).toContainText("since its run finished");

    // Selection belongs to the filters: changing one clears it.
    await page.getByLabel(`Select ${bare.name}`).check();
    await expect(page.getByRole("button", { name: "Dry run (1 selected)" })).toBeEnabled();
    await page.getByLabel("Ownership").selectOption("reclaimable");
    await expect(page).toHaveURL(/verdict=reclaimable/);
    await expect(page.getByRole("button", { name: "Dry run (0 selected)" })).toBeDisabled();
    await page.getByLabel("Ownership").selectOption("");

    // Dry run over the two of ours and the decoy.
    for (const s of [left, bare, decoy]) await page.getByLabel(`Select ${s.name}`).check();
    await page.getByRole("button", { name: "Dry run (3 selected)" }).click();
    const plan = page.getByTestId("dry-run");
    await expect(plan).toContainText("nothing has been destroyed");
    await expect(plan.locator(`tr[data-result-for="${left.id}"]`)).toHaveAttribute("data-outcome", "would_destroy");
    await expect(plan.locator(`tr[data-result-for="${bare.id}"]`)).toHaveAttribute("data-outcome", "would_destroy");
    await expect(plan.locator(`tr[data-result-for="${decoy.id}"]`)).toHaveAttribute("data-outcome", "refused");
    // A deleted sandbox is `destroying` for a moment before `destroyed`, as in Daytona: neither is alive.
    const alive = async () => new Set((await emulatorSandboxes(baseURL)).filter((s) => !/^destroy(ing|ed)$/.test(s.state)).map((s) => s.id));
    for (const s of [left, bare, decoy]) expect((await alive()).has(s.id)).toBe(true);
    await expectAccessible(page);
    await screenshot(page, "orphans");

    // The typed confirmation names the count.
    const destroy = page.getByRole("button", { name: "Destroy 2 sandboxes" });
    await expect(destroy).toBeDisabled();
    await page.getByLabel(/Type destroy 2 to destroy 2 sandboxes/).fill("destroy 2");
    await destroy.click();
    const result = page.getByTestId("reclaim-result");
    await expect(result.locator(`tr[data-result-for="${left.id}"]`)).toHaveAttribute("data-outcome", "destroyed");
    await expect(result.locator(`tr[data-result-for="${bare.id}"]`)).toHaveAttribute("data-outcome", "destroyed");
    const after = await alive();
    expect(after.has(left.id)).toBe(false);
    expect(after.has(bare.id)).toBe(false);
    expect(after.has(decoy.id)).toBe(true);
    // The audit entry of this reclaim: the one naming this spec's two sandboxes as destroyed.
    const reclaims = await db.auditEntry.findMany({ where: { action: "orphans.reclaim", outcome: "ok" } });
    const destroyedIn = (detail: unknown) =>
      ((detail as { results?: { sandboxId: string; outcome: string }[] } | null)?.results ?? []).filter((r) => r.outcome === "destroyed").map((r) => r.sandboxId).sort();
    expect(reclaims.map((e) => destroyedIn(e.detail))).toContainEqual([left.id, bare.id].sort());
    await expect(page.getByTestId("orphans-table").locator(`tr[data-sandbox-id="${left.id}"]`)).toHaveCount(0);
  } finally {
    await db.$disconnect();
  }
});

test("a person who sees one company is not told every sandbox is held when other companies' sandboxes exist", async ({ page, browser, baseURL }) => {
  const board = await browser.newContext({ storageState: stateFile("board") });
  try {
    const t = tag();
    const { instanceId } = await trpcQuery<{ instanceId: string }>(page.request, "intents.list", {});
    // An orphan of another company: the board member of company A is not shown it.
    await plant(baseURL, { name: `e2e-not-yours-${t}`, labels: { "runwarden.instance": instanceId, "runwarden.company": `co-e2e-elsewhere-${t}` }, cpu: 1 });
    const p = await board.newPage();
    await p.goto("/orphans");
    const empty = p.getByText(/^No orphaned sandboxes/);
    await expect(empty).toContainText(`No orphaned sandboxes of your company (${BOARD_COMPANY})`);
    await expect(empty).toContainText("Sandboxes of other companies are not shown to you.");
    await expect(empty).not.toContainText("every sandbox");
  } finally {
    await board.close();
  }
});
