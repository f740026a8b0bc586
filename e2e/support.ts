import AxeBuilder from "@axe-core/playwright";
import { test as base, expect, type APIRequestContext, type Locator, type Page } from "@playwright/test";
import type { Db } from "../server/db/client";

/**
 * Helpers for the browser tests: the product's tRPC API and the emulator's admin API over
 * HTTP (exactly as an operator's tools would reach them), accessibility checks, screenshots.
 */

/**
 * Playwright's `test`, failing any test whose page threw an uncaught error — among them React's
 * recoverable ones, such as a hydration mismatch (#418), after which React throws the server's
 * HTML away and renders the page again in the browser.
 */
export const test = base.extend<{ pageErrors: void }>({
  pageErrors: [
    async ({ page }, use) => {
      const errors: string[] = [];
      page.on("pageerror", (err) => errors.push(`${page.url()}: ${err.message}`));
      await use();
      expect(errors, "uncaught errors in the page").toEqual([]);
    },
    { auto: true },
  ],
});
export { expect };

/** The emulator runs on the dashboard's port + 700 (playwright.config.ts). */
export function emulatorUrl(baseURL: string | undefined): string {
  const url = new URL(baseURL ?? "http://127.0.0.1:3199");
  return `http://127.0.0.1:${Number(url.port) + 700}`;
}

async function admin(baseURL: string | undefined, path: string, body: unknown): Promise<unknown> {
  const res = await fetch(`${emulatorUrl(baseURL)}${path}`, {
    method: "POST",
    headers: { Authorization: "Bearer emulator-key", "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`emulator ${path}: ${res.status} ${await res.text()}`);
  return res.json();
}

export function setFault(baseURL: string | undefined, rule: { match: Record<string, unknown>; fault: Record<string, unknown> }) {
  return admin(baseURL, "/admin/faults", rule);
}

export async function plant(baseURL: string | undefined, input: { name: string; labels: Record<string, string>; cpu?: number; memory?: number; disk?: number; createdAt?: string }) {
  return (await admin(baseURL, "/admin/sandboxes", input)) as { id: string; name: string };
}

/** Every sandbox the emulator has (admin view, not scoped), destroyed ones included. */
export async function emulatorSandboxes(baseURL: string | undefined): Promise<Array<{ id: string; name: string; state: string }>> {
  const res = await fetch(`${emulatorUrl(baseURL)}/admin/sandboxes?includeDestroyed=true`, { headers: { Authorization: "Bearer emulator-key" } });
  return ((await res.json()) as { items: Array<{ id: string; name: string; state: string }> }).items;
}

/**
 * A tRPC mutation over HTTP (superjson's wire shape), as whoever `request` is signed in as
 * (`page.request` shares the page's cookies: the operator unless a spec says otherwise).
 */
export async function trpcMutation<T>(request: APIRequestContext, path: string, input: unknown): Promise<T> {
  const res = await request.post(`/api/trpc/${path}`, { headers: { "content-type": "application/json" }, data: { json: input } });
  const body = (await res.json()) as { result?: { data: { json: T } }; error?: { json: { message: string } } };
  if (!body.result) throw new Error(`${path}: ${body.error?.json.message ?? res.status()}`);
  return body.result.data.json;
}

export async function trpcQuery<T>(request: APIRequestContext, path: string, input: unknown): Promise<T> {
  const res = await request.get(`/api/trpc/${path}?input=${encodeURIComponent(JSON.stringify({ json: input }))}`);
  const body = (await res.json()) as { result?: { data: { json: T } }; error?: { json: { message: string } } };
  if (!body.result) throw new Error(`${path}: ${body.error?.json.message ?? res.status()}`);
  return body.result.data.json;
}

export function tag(): string {
  return `${Date.now().toString(36)}${Math.floor(Math.random() * 1e4).toString(36)}`;
}

/** Polls until `check` gives a value. */
export async function eventually<T>(what: string, check: () => Promise<T | null | undefined | false>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/**
 * Waits until an orphans-inventory pass has listed `sandboxId` (server/sandboxes/inventory.ts):
 * each `orphans.list` asked of an inventory older than INVENTORY_REFRESH_MS starts a pass, so
 * this is over a few seconds after a plant. A page loaded afterwards shows the sandbox at once
 * instead of at its next refetch (the overview's is 20 s away).
 */
export async function inventoried(request: APIRequestContext, sandboxId: string): Promise<void> {
  await eventually(`an inventory pass listing ${sandboxId}`, async () => (await trpcQuery<{ items: Array<{ id: string }> }>(request, "orphans.list", { search: sandboxId })).items.some((s) => s.id === sandboxId));
}

/**
 * A remote run whose session.open the provider rejects (docs/rules.md §2.3): the controller
 * ends it with native_provider_startup_rejected and Retry. The fault matches the company
 * label, so it is in place before the controller's first poll. `request` submits the run
 * (it needs the operator role).
 */
export async function rejectedRun(
  db: Db,
  baseURL: string | undefined,
  request: APIRequestContext,
  companyId = `co-e2e-reject-${tag()}`,
  /** A shared company (the board's) is rejected once only, so later specs' runs there start. */
  times?: number,
): Promise<{ id: string; companyId: string; taskId: string }> {
  const t = tag();
  await admin(baseURL, "/admin/faults", { match: { labels: { "runwarden.company": companyId } }, fault: { kind: "reject" }, ...(times ? { times } : {}) });
  const run = await trpcMutation<{ id: string }>(request, "runs.create", { companyId, taskId: `task-reject-${t}`, agent: "planner", provider: "codex", target: "remote", sandboxMode: "warm", turns: 1 });
  await eventually("the startup rejection", async () => (await db.run.findUniqueOrThrow({ where: { id: run.id } })).status === "failed");
  return { id: run.id, companyId, taskId: `task-reject-${t}` };
}

/**
 * Waits until React has hydrated this element (its props are attached): a click on
 * server-rendered markup before then does nothing, which under load lost a test's click.
 */
export async function hydrated(locator: Locator): Promise<Locator> {
  await expect
    .poll(() => locator.evaluate((el) => Object.keys(el).some((k) => k.startsWith("__reactProps$"))), { message: "the element is hydrated" })
    .toBe(true);
  return locator;
}

/**
 * axe's whole default rule set over the page, run in the page itself (`axe.run`, "legacy
 * mode"). The default mode runs each frame's part and then opens a new blank tab to merge
 * them, to reach cross-origin frames: no page here has a frame of any kind, and that extra
 * tab took ~1-1.5 s of each analysis against ~0.1-0.7 s for the analysis itself.
 */
export function axeAnalyze(page: Page) {
  return new AxeBuilder({ page }).setLegacyMode(true).analyze();
}

/** No serious or critical accessibility violation (axe), in light and in dark mode. */
export async function expectAccessible(page: Page) {
  for (const colorScheme of ["light", "dark"] as const) {
    await page.emulateMedia({ colorScheme });
    // A toast still fading (in, out, or behind a newer one: sonner fades a stacked toast's
    // content) is judged by its half-transparent colours. The pointer on the toasts holds them
    // (sonner pauses its timers and expands the stack while hovered), so none starts leaving
    // during the analysis — a toast that did failed CI once — then no toast transition may run.
    // A toast that arrives or leaves during the analysis can still be caught mid-fade: the
    // analysis is taken again, and only a violation that stays fails.
    await expect(async () => {
      const toasts = page.locator("[data-sonner-toast]");
      // Forced: under a modal dialog (pointer-events: none on the page) the actionability
      // checks would wait out the whole timeout for nothing; a toast the pointer cannot hold is
      // caught by the wait below and the retry.
      if ((await toasts.count()) > 0) await toasts.first().hover({ force: true, timeout: 2_000 }).catch(() => {}); // gone meanwhile: nothing to hold
      await page.waitForFunction(() =>
        [...document.querySelectorAll("[data-sonner-toast]")].every((t) => getComputedStyle(t).opacity === "1") &&
        document.getAnimations().every((a) => {
          const target = a.effect instanceof KeyframeEffect ? a.effect.target : null;
          return a.playState !== "running" || !target?.closest("[data-sonner-toaster]");
        }),
      );
      const results = await axeAnalyze(page);
      const serious = results.violations
        .filter((v) => v.impact === "serious" || v.impact === "critical")
        .map((v) => `${colorScheme}: ${v.id} (${v.impact}): ${v.help} — ${v.nodes.map((n) => `${n.target.join(" ")}: ${n.failureSummary ?? ""}`).slice(0, 5).join("; ")}`);
      await page.mouse.move(0, 0);
      expect(serious, serious.join("\n")).toEqual([]);
    }).toPass({ timeout: 20_000, intervals: [1_000, 2_000] });
  }
  await page.emulateMedia({ colorScheme: "light" });
}

export async function screenshot(page: Page, name: string) {
  // The picture is of the page, not of the toasts over it: they are hidden for the picture
  // rather than waited out (sonner keeps one for ~4 s; that wait was most of some tests' idle time).
  await page.screenshot({ path: `e2e/screenshots/${name}.png`, fullPage: true, style: "[data-sonner-toaster] { display: none !important; }" });
}
