/**
 * The dashboard as a browser sees it, for the benchmarks (docs/decisions/0003-cost-at-scale.md): the production server
 * (`next start` on the last build) against a throwaway database, signed in through the
 * sign-in page in Chromium, with
 * - the largest contentful paint of a page, over fresh browser contexts (a first visit:
 *   no HTTP cache), and when its first list row showed; beside it, its floor: the first
 *   paint of the same page with JavaScript off (this Chromium on this machine, the server's
 *   HTML alone);
 * - the server's resident memory (the `next start` process and its children), sampled while
 *   a page is open.
 */
import { spawn, type ChildProcess } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import { chromium, type Browser, type BrowserContext } from "@playwright/test";
import { addUser } from "../../server/auth/users";
import { createDb } from "../../server/db/client";
import { childEnv } from "../../server/env";
import { buildIsCurrent } from "../lib/build";
import { CHROMIUM_ARGS, findChromium, HOW_TO_GET_CHROMIUM } from "../lib/chromium";
import { freePort } from "../../server/emulator/sandbox-host";
import { nodeBin, runToEnd, stopService, waitForHttp, WEB_SERVER_ENV, webServerArgs } from "../lib/processes";
import { quantile, unitFigure, type Figure } from "./measure";

const say = (line = "") => process.stdout.write(`${line}\n`);

export interface WebServer {
  url: string;
  pid: number;
  /** Resident memory of the server and every process under it, in MB. */
  rssMb(): number;
  stop(): Promise<void>;
}

/** A production build of the current sources, built first when it is missing or stale. */
export async function ensureCurrentBuild(): Promise<void> {
  const build = buildIsCurrent();
  if (build.current) return;
  say(`building the dashboard for the browser figures (${build.reason})…`);
  const code = await runToEnd(process.execPath, [nodeBin("next/dist/bin/next"), "build"], childEnv({ NEXT_TELEMETRY_DISABLED: "1" }));
  if (code !== 0) throw new Error(`next build failed with exit code ${code}`);
}

/** `next start` on `databaseUrl`, as `npm start` runs the web service (vars: instance, provider). */
export async function startWeb(databaseUrl: string, vars: Record<string, string> = {}): Promise<WebServer> {
  await ensureCurrentBuild();
  const port = await freePort();
  const child: ChildProcess = spawn(process.execPath, webServerArgs(port, "127.0.0.1"), {
    env: childEnv({ ...WEB_SERVER_ENV, DATABASE_URL: databaseUrl, NODE_ENV: "production", NEXT_TELEMETRY_DISABLED: "1", LOG_LEVEL: "warn", RUNWARDEN_PG_PORT: undefined, ...vars }),
    detached: true,
    stdio: ["ignore", "ignore", "pipe"],
  });
  let errors = "";
  child.stderr?.setEncoding("utf8");
  child.stderr?.on("data", (c: string) => (errors = (errors + c).slice(-4000)));
  const url = `http://127.0.0.1:${port}`;
  const pid = child.pid;
  if (!pid) throw new Error("next start did not start");
  const service = { name: "web", child, exited: new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) => child.once("exit", (code, signal) => r({ code, signal }))) };
  const stop = () => stopService(service);
  if (!(await waitForHttp(`${url}/api/trpc/runs.countByStatus`, 90_000, () => child.exitCode !== null))) {
    await stop();
    throw new Error(`the dashboard did not answer on ${url} within 90 s:\n${errors}`);
  }
  return { url, pid, rssMb: () => treeRssMb(pid), stop };
}

/** VmRSS of a process and all its descendants (from /proc), in MB. */
export function treeRssMb(root: number): number {
  const children = new Map<number, number[]>();
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      const list = children.get(ppid) ?? [];
      list.push(Number(entry));
      children.set(ppid, list);
    } catch {
      // exited while listing
    }
  }
  let kb = 0;
  const stack = [root];
  while (stack.length) {
    const pid = stack.pop()!;
    try {
      const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"));
      kb += m ? Number(m[1]) : 0;
    } catch {
      // exited
    }
    stack.push(...(children.get(pid) ?? []));
  }
  return Math.round(kb / 1024);
}

export async function launchBrowser(): Promise<Browser> {
  const executablePath = findChromium();
  if (!executablePath) throw new Error(HOW_TO_GET_CHROMIUM);
  return chromium.launch({ executablePath, args: CHROMIUM_ARGS });
}

/** An operator of every company, made in the database and signed in through the sign-in page; its cookies. */
export async function signedInState(browser: Browser, web: WebServer, databaseUrl: string): Promise<Awaited<ReturnType<BrowserContext["storageState"]>>> {
  const email = `bench-${crypto.randomBytes(4).toString("hex")}@bench.test`;
  const password = crypto.randomBytes(18).toString("base64url");
  const db = createDb(databaseUrl, { max: 1 });
  try {
    await addUser(db, { email, role: "operator", companies: ["*"], password }, { id: "bench", role: "admin" }, { all: true });
  } finally {
    await db.$disconnect();
  }
  const context = await browser.newContext({ baseURL: web.url });
  try {
    const page = await context.newPage();
    await page.goto("/sign-in");
    await page.getByLabel("Email").fill(email);
    await page.getByLabel("Password").fill(password);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForURL((u) => u.pathname === "/", { timeout: 30_000 });
    return await context.storageState();
  } finally {
    await context.close();
  }
}

/**
 * Largest contentful paint of `path` over `visits` first visits (a fresh context each: no
 * HTTP cache, a signed-in cookie), and when the page's first table row was in the DOM.
 */
export async function pageLoadFigures(
  browser: Browser,
  web: WebServer,
  state: Awaited<ReturnType<BrowserContext["storageState"]>>,
  path: string,
  size: number,
  visits: number,
): Promise<Figure[]> {
  const lcps: number[] = [];
  const rows: number[] = [];
  const elements = new Map<string, number>();
  for (let i = 0; i < visits + 1; i++) {
    const context = await browser.newContext({ baseURL: web.url, storageState: state });
    try {
      const page = await context.newPage();
      // The row's time is taken in the page, so the bench's own polling adds nothing to it.
      await page.addInitScript(() => {
        const w = window as unknown as { __firstRowAt?: number };
        new MutationObserver((_m, obs) => {
          if (document.querySelector("tbody tr")) {
            w.__firstRowAt = performance.now();
            obs.disconnect();
          }
        }).observe(document, { childList: true, subtree: true });
      });
      await page.goto(path, { waitUntil: "load" });
      await page.waitForSelector("tbody tr", { timeout: 30_000 });
      // LCP entries settle once the page stops painting bigger things; read the last one after a quiet moment.
      await page.waitForTimeout(500);
      const m = await page.evaluate(
        () =>
          new Promise<{ lcp: number; row: number; element: string }>((resolve) => {
            new PerformanceObserver((list) => {
              const entries = list.getEntries();
              const last = entries[entries.length - 1] as (PerformanceEntry & { element?: Element | null }) | undefined;
              const el = last?.element;
              const element = el ? `<${el.tagName.toLowerCase()}> "${(el.textContent ?? "").trim().slice(0, 40)}"` : "?";
              resolve({ lcp: last ? last.startTime : NaN, row: (window as unknown as { __firstRowAt?: number }).__firstRowAt ?? NaN, element });
            }).observe({ type: "largest-contentful-paint", buffered: true });
          }),
      );
      // The first visit warms the server's route modules: not counted.
      if (i > 0) {
        elements.set(m.element, (elements.get(m.element) ?? 0) + 1);
        lcps.push(m.lcp);
        rows.push(m.row);
      }
    } finally {
      await context.close();
    }
  }
  // The floor, visited after the figures above (never interleaved with them): the server's HTML
  // and CSS painted with scripts off. What LCP adds to it is the page's own JavaScript.
  const floors: number[] = [];
  for (let i = 0; i < visits; i++) {
    const context = await browser.newContext({ baseURL: web.url, storageState: state, javaScriptEnabled: false });
    try {
      const page = await context.newPage();
      await page.goto(path, { waitUntil: "load" });
      await page.waitForSelector("tbody tr", { timeout: 30_000 });
      await page.waitForTimeout(500);
      // With scripts off no observer runs in the page; the paint timing is read from outside.
      floors.push(await page.evaluate(() => performance.getEntriesByName("first-contentful-paint")[0]?.startTime ?? NaN));
    } finally {
      await context.close();
    }
  }
  lcps.sort((a, b) => a - b);
  rows.sort((a, b) => a - b);
  floors.sort((a, b) => a - b);
  const figure = (name: string, xs: number[], note: string): Figure =>
    unitFigure(name, size, Math.round(quantile(xs, 0.5)), "ms median", `${note}; min ${Math.round(xs[0] ?? NaN)}, p95 ${Math.round(quantile(xs, 0.95))} ms over ${xs.length} first visits`);
  return [
    figure(`${path} largest contentful paint`, lcps, `goal ≤ 1000 ms; the element: ${[...elements].map(([e, n]) => `${e} ×${n}`).join(", ")}`),
    figure(`${path} first list row in the DOM`, rows, "from navigation start"),
    figure(`${path} first paint with JavaScript off (the floor)`, floors, `LCP's floor on this machine; LCP median ×${(quantile(lcps, 0.5) / quantile(floors, 0.5)).toFixed(2)} of it`),
  ];
}

/** `/runs` as a first visit sees it, on the database the figures were measured on. */
export async function runsPageFigures(databaseUrl: string, size: number, visits = 10): Promise<Figure[]> {
  const web = await startWeb(databaseUrl, { RUNWARDEN_FIRST_BOOT_WAVE: "off" });
  try {
    const browser = await launchBrowser();
    try {
      const state = await signedInState(browser, web, databaseUrl);
      const figures = await pageLoadFigures(browser, web, state, "/runs", size, visits);
      figures.push(unitFigure("web server RSS after /runs visits", size, web.rssMb(), "MB", "the `next start` process tree"));
      return figures;
    } finally {
      await browser.close();
    }
  } finally {
    await web.stop();
  }
}

/**
 * The web server's memory while an /orphans tab stays open for `seconds` (its polls and the
 * inventory passes they start run in that server), against the same server before the tab.
 */
export async function orphansPageFigures(databaseUrl: string, size: number, vars: Record<string, string>, seconds = 45): Promise<Figure[]> {
  const web = await startWeb(databaseUrl, { RUNWARDEN_FIRST_BOOT_WAVE: "off", ...vars });
  try {
    const browser = await launchBrowser();
    try {
      const state = await signedInState(browser, web, databaseUrl);
      const before = web.rssMb();
      const context = await browser.newContext({ baseURL: web.url, storageState: state });
      let peak = before;
      const sampler = setInterval(() => (peak = Math.max(peak, web.rssMb())), 250);
      const t0 = performance.now();
      let firstRowMs = NaN;
      try {
        const page = await context.newPage();
        await page.goto("/orphans");
        await page.waitForSelector("tbody tr", { timeout: 120_000 });
        firstRowMs = performance.now() - t0;
        // The tab stays open: its polls and the background inventory passes go on.
        await page.waitForTimeout(seconds * 1000);
      } finally {
        clearInterval(sampler);
        await context.close();
      }
      peak = Math.max(peak, web.rssMb());
      return [
        unitFigure("/orphans first row (a first visit)", size, Math.round(firstRowMs), "ms", "from goto to the first table row, the inventory's first pass included"),
        unitFigure(`web server RSS peak, /orphans open ${seconds} s`, size, peak, "MB", `${before} MB signed in before the tab; goal ≤ 300 MB`),
      ];
    } finally {
      await browser.close();
    }
  } finally {
    await web.stop();
  }
}
