import { expect, expectAccessible, rejectedRun, tag, test } from "./support";
import { e2eDb } from "./db";
import { stateFile } from "./accounts";
import { LIVE_POLL_MS, LIVE_TOKEN_INTERVAL_MS } from "../server/shared/live";

/**
 * The client's first retry of a failed query: TanStack Query's default retryDelay (1 s, then
 * doubling); trpc/query-client.ts sets `retry` but no `retryDelay`.
 */
const CLIENT_RETRY_DELAY_MS = 1_000;
/**
 * How long a page that answered a 4xx is watched: past its polls (trpc/live.ts: LIVE_POLL_MS for
 * what is polled, LIVE_TOKEN_INTERVAL_MS for the live token that re-runs the rest) and the
 * client's retry, with a second to spare. Polling, a token-driven refetch or a retry of the 4xx
 * would each have asked again within it.
 */
const WATCH_MS = Math.max(LIVE_POLL_MS, LIVE_TOKEN_INTERVAL_MS) + CLIENT_RETRY_DELAY_MS + 1_000;

test("every page is accessible (axe: no serious or critical violation, light and dark) and errors are shown, not blank", async ({ page }) => {
  // Twenty axe passes (ten pages, light and dark): 40 s on an idle machine, 2.7 min measured under load.
  test.setTimeout(300_000);
  const db = e2eDb();
  try {
    const anyRun = await db.run.findFirst({ orderBy: { createdAt: "desc" } });
    const pages = ["/", "/runs", "/intents", "/orphans", "/evidence", "/waves", "/audit", "/users", "/alerts", ...(anyRun ? [`/runs/${anyRun.id}`] : [])];
    for (const path of pages) {
      await page.goto(path);
      await expect(page.getByRole("heading", { level: 1 })).toBeVisible();
      await expect(page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Runs" })).toBeVisible();
      await expectAccessible(page);
    }

    // A run that does not exist is a not-found page; a bad filter shows the server's message.
    await page.goto("/runs/00000000-0000-4000-8000-000000000000");
    await expect(page.getByRole("heading", { name: "Not found" })).toBeVisible();
    await page.goto("/runs?from=2030-01-02T00:00:00.000Z&to=2030-01-01T00:00:00.000Z");
    await expect(page.getByRole("alert").filter({ hasText: "createdTo: must not be before createdFrom" }).first()).toBeVisible();
    await expectAccessible(page);
  } finally {
    await db.$disconnect();
  }
});

test("malformed addresses and unknown objects answer 404/400 with a page, never a bare 500; another company's run is a 404 too", async ({ page, browser, baseURL }) => {
  const db = e2eDb();
  const board = await browser.newContext({ storageState: stateFile("board") });
  try {
    for (const path of ["/runs/%ff", "/waves/%ff"]) {
      const res = await page.goto(path);
      expect(res!.status(), path).toBe(404);
      await expect(page.getByRole("heading", { name: "Not found" })).toBeVisible();
    }
    const api = await page.request.get("/api/trpc/%ff");
    expect(api.status()).toBe(400);
    expect(((await api.json()) as { error: { message: string } }).error.message).toContain("malformed address");
    // The HTTP API through the production server (docs/api.md): its document without a token, its one error shape otherwise — a session cookie opens nothing there.
    const v1 = await page.request.get("/api/v1/runs/%ff");
    expect([v1.status(), await v1.json()]).toEqual([400, { error: { code: "INVALID_INPUT", message: "malformed address: its percent-encoding does not decode", field: null } }]);
    const doc = await page.request.get("/api/v1/openapi.json");
    expect([doc.status(), ((await doc.json()) as { openapi: string }).openapi]).toEqual([200, "3.1.0"]);
    const byCookie = await board.request.get("/api/v1/runs");
    expect([byCookie.status(), ((await byCookie.json()) as { error: { code: string } }).error.code]).toEqual([401, "UNAUTHORIZED"]);

    // Unknown ids: a real 404 status with the not-found page, not a 200 that says so later.
    for (const path of ["/runs/00000000-0000-4000-8000-000000000000", "/runs/not-a-uuid", `/waves/no-such-wave-${tag()}`]) {
      const res = await page.goto(path);
      expect(res!.status(), path).toBe(404);
      await expect(page.getByRole("heading", { name: "Not found" })).toBeVisible();
      await expect(page.getByText("Loading…")).toHaveCount(0);
    }

    // Another company's run is exactly as missing for a board member of company A.
    const other = await rejectedRun(db, baseURL, page.request);
    const boardPage = await board.newPage();
    const res = await boardPage.goto(`/runs/${other.id}`);
    expect(res!.status()).toBe(404);
    await expect(boardPage.getByRole("heading", { name: "Not found" })).toBeVisible();
  } finally {
    await board.close();
    await db.$disconnect();
  }
});

test("a 4xx is shown once and stays: no retries, no polling, no flicker back to Loading…; inputs carry the server's limits", async ({ page, context }) => {
  const db = e2eDb();
  const cases = [
    { path: "/runs?cursor=garbage", procedure: "runs.list", alert: "Could not load the runs." },
    { path: "/audit?before=abc", procedure: "audit.list", alert: "Could not load the audit log." },
    { path: `/runs?q=${"x".repeat(5000)}`, procedure: "runs.list", alert: "Could not load the runs." },
  ];
  // The three are watched side by side, a tab each: the same window for each, once.
  const tabs = await Promise.all(cases.map(async (c, i) => {
    const tab = i === 0 ? page : await context.newPage();
    const calls: string[] = [];
    tab.on("request", (r) => {
      const url = new URL(r.url());
      if (url.pathname.startsWith("/api/trpc/")) calls.push(url.pathname);
    });
    await tab.goto(c.path);
    const error = tab.getByRole("alert").filter({ hasText: c.alert }).first();
    await expect(error).toBeVisible();
    return { ...c, tab, calls, error, loading: tab.getByRole("status").filter({ hasText: "Loading" }), seenLoading: [] as boolean[] };
  }));
  try {
    // Longer than the pages' polling interval and the client's retry delay (WATCH_MS), a
    // second at a time.
    for (let i = 0; i < WATCH_MS / 1_000; i++) {
      // The runs topic moves as on a busy installation: a live page must not ask a 4xx again.
      await db.$queryRaw`SELECT nextval('live_runs')`;
      await page.waitForTimeout(1_000);
      for (const t of tabs) {
        t.seenLoading.push(await t.loading.isVisible());
        await expect(t.error).toBeVisible();
      }
    }
    for (const t of tabs) {
      expect(t.seenLoading.some(Boolean), `${t.path}: went back to Loading…`).toBe(false);
      const failing = t.calls.filter((c) => c.includes(t.procedure));
      expect(failing.length, `${t.path}: ${t.procedure} asked ${failing.length} times in ${WATCH_MS / 1_000} s: ${failing.join(" ")}`).toBeLessThanOrEqual(1);
    }
    for (const t of tabs.slice(1)) await t.tab.close();

    // A person cannot type more than the server accepts.
    await page.goto("/runs");
    await expect(page.getByLabel("Run or task id")).toHaveAttribute("maxlength", "200");
    await page.goto("/intents");
    await expect(page.getByLabel("Search")).toHaveAttribute("maxlength", "200");
  } finally {
    await db.$disconnect();
  }
});
