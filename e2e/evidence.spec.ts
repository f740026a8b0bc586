import { expect, expectAccessible, rejectedRun, screenshot, test } from "./support";
import { e2eDb } from "./db";

test("evaluating evidence: a stored bundle gives its verdict and checks; a bad one names the field", async ({ page, baseURL }) => {
  const db = e2eDb();
  try {
    const run = await rejectedRun(db, baseURL, page.request);
    const proof = await db.proof.findFirstOrThrow({ where: { runId: run.id, kind: "startup_failure" } });

    await page.goto("/evidence");
    await expectAccessible(page);
    await page.getByLabel("Evidence bundle (JSON)").fill(JSON.stringify(proof.evidence, null, 2));
    await page.getByRole("button", { name: "Evaluate" }).click();
    const verdict = page.getByTestId("verdict");
    await expect(verdict).toContainText(proof.verdict);
    // startup_failure is a judgement: each answer is yes or no, the last one decided.
    const checks = proof.checks as Array<{ name: string; ok: boolean }>;
    for (const [i, c] of checks.entries()) {
      const row = verdict.locator(`tr[data-check="${c.name}"]`);
      await expect(row).toContainText(c.ok ? "yes" : "no");
      await expect(row).toHaveAttribute("data-reading", i === checks.length - 1 ? "decided" : "went_on");
    }
    await expect(verdict.locator(`tr[data-check="${checks.at(-1)!.name}"]`)).toContainText(`→ ${proof.verdict}`);
    await expectAccessible(page);
    await screenshot(page, "evidence");

    // An upload works the same; a wrong field is named.
    const bad = { ...(proof.evidence as object), attempt: "one" };
    await page.getByLabel("Or upload a file").setInputFiles({ name: "bad.json", mimeType: "application/json", buffer: Buffer.from(JSON.stringify(bad)) });
    await expect(page.getByLabel("Evidence bundle (JSON)")).toHaveValue(/"attempt":"one"/);
    await page.getByRole("button", { name: "Evaluate" }).click();
    await expect(page.getByTestId("evaluate-error")).toContainText("evidence.attempt:");

    await page.getByLabel("Evidence bundle (JSON)").fill("{ not json");
    await page.getByRole("button", { name: "Evaluate" }).click();
    await expect(page.getByRole("alert").filter({ hasText: "not JSON" })).toBeVisible();
  } finally {
    await db.$disconnect();
  }
});
