import superjson from "superjson";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Role, SessionUser } from "../shared/roles";
import { handleAuthRequest } from "../auth/handler";
import { addUser, sessionUser } from "../auth/users";
import type { ControllerContext } from "../controller/context";
import { startControllerHarness, type ControllerHarness } from "../test/controller";
import leaseBindingEvidence from "../engine/fixtures/lease-binding-staged-created.json";
import { inputSchemaOf, malformedInputs, sampleWaveReport, type FuzzCase } from "../test/fuzz";
import { trpcHttpHandler } from "./http";
import { appRouter } from "./root";
import type { Meta } from "./trpc";
import { servicesOf } from "../services";
import { prng } from "../waves/plan";

/**
 * The fuzz test: every procedure of the router (so a new one is fuzzed without being
 * listed) gets malformed inputs over HTTP through the production handler, against
 * PostgreSQL, as a signed-in admin (and mutations as a viewer too). Never a 5xx; every 4xx
 * carries a message; no response carries database text; every refused mutation is audited.
 *
 * Each procedure gets a bounded number of its malformed inputs, chosen with a fixed seed
 * (printed): every position of its input is tried at least once, and at each position of an
 * input sampled from its schema the values most likely to reach the database as they are
 * (`SHORT`: null anywhere, NUL in a string); then kinds of malformation not tried yet, then
 * the seed's pick, up to the bound. A viewer's mutation is refused whatever its input: a few
 * of its malformed whole inputs and raw bodies (each group at least once) show the refusal
 * comes first. Trying every value at every position adds requests, not properties; another
 * seed (`FUZZ_SEED` below) tries other combinations.
 */

/** The seed that picks each procedure's cases. Change it to explore; a failure names it. */
const FUZZ_SEED = 16;
/**
 * Cases per procedure as admin (the positions take at most 62, waves.import's report having
 * that many; the test throws if they need more) and per mutation as a viewer.
 */
const ADMIN_CASES = 64;
const VIEWER_CASES = 12;
/** The values tried at every position of a sampled input (PostgreSQL refuses NUL in text; null reaches code that expects a value). */
const SHORT = new Set(["null", "NUL"]);

const ORIGIN = "http://localhost:3000";
/** Text of Prisma's or PostgreSQL's errors that must stay in the server log. */
const DATABASE_TEXT = /prisma|\bP[1-5]\d{3}\b|SQLSTATE|invalid input syntax|postgres|\binvocation\b|violates|out of range for type|\bat [\w.<>]+ \(/i;

/**
 * Valid inputs for procedures whose schema does not describe them (free-form JSON checked
 * further in): each of their fields is fuzzed too. Others start from their schema's sample.
 */
const BASES: Record<string, unknown> = {
  "proofs.evaluate": leaseBindingEvidence,
  "waves.import": { report: sampleWaveReport() },
};

type ProcedureDef = { _def: { type: "query" | "mutation" | "subscription"; meta?: Meta; inputs: unknown[] } };
const procedures = Object.entries(appRouter._def.procedures as unknown as Record<string, ProcedureDef>);

let h: ControllerHarness;
let service: ControllerContext;
const cookies: Partial<Record<Role, string>> = {};
/** The admin as their session cookie resolves (see `send`). */
let adminUser: SessionUser | null = null;
let requests = 0;
const started = Date.now();

async function signIn(role: Role): Promise<string> {
  const email = `fuzz-${role}@example.com`;
  const password = `fuzz ${role} password`;
  await addUser(h.db.db, { email, role, companies: ["*"], password }, { id: "test", role: "admin" }, { all: true });
  const res = await handleAuthRequest(h.db.db, new Request(`${ORIGIN}/api/auth/sign-in/email`, {
    method: "POST",
    headers: { "content-type": "application/json", origin: ORIGIN, "x-forwarded-for": `192.0.2.${role.length}` },
    body: JSON.stringify({ email, password }),
  }));
  expect(res.status).toBe(200);
  return res.headers.getSetCookie().map((c) => c.split(";")[0]).join("; ");
}

beforeAll(async () => {
  h = await startControllerHarness();
  service = h.service();
  cookies.admin = await signIn("admin");
  cookies.viewer = await signIn("viewer");
  adminUser = await sessionUser(h.db.db, new Headers({ cookie: cookies.admin }));
  expect(adminUser?.role).toBe("admin");
});

afterAll(async () => {
  console.log(`fuzz: ${requests} requests over HTTP in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  await h?.close();
});

/**
 * One request as the route serves it: a query as GET ?input=, a mutation as a POST body.
 * The viewer's requests carry the session cookie, looked up on each request as in
 * production; the admin's (most of them) carry the person that same cookie resolved to,
 * because a session lookup costs ~20 ms here and would triple the test's time.
 */
async function send(path: string, type: string, c: FuzzCase, role: Role): Promise<{ status: number; text: string }> {
  const body = "raw" in c ? c.raw : c.input === undefined ? undefined : JSON.stringify(superjson.serialize(c.input));
  const headers = { cookie: cookies[role]!, origin: ORIGIN, "content-type": "application/json" };
  const req =
    type === "query"
      ? new Request(`${ORIGIN}/api/trpc/${path}${body === undefined ? "" : `?input=${encodeURIComponent(body)}`}`, { headers })
      : new Request(`${ORIGIN}/api/trpc/${path}`, { method: "POST", headers, body: body ?? "" });
  requests++;
  const res = await trpcHttpHandler(req, role === "admin" ? { db: h.db.db, services: servicesOf(service), user: adminUser } : { db: h.db.db, services: servicesOf(service) });
  return { status: res.status, text: await res.text() };
}

function messageOf(text: string): string | null {
  try {
    const body = JSON.parse(text) as { error?: { json?: { message?: unknown }; message?: unknown } };
    const m = body.error?.json?.message ?? body.error?.message;
    return typeof m === "string" && m.trim() ? m : null;
  } catch {
    return null;
  }
}

async function lastAuditId(): Promise<bigint> {
  return (await h.db.db.auditEntry.findFirst({ orderBy: { id: "desc" }, select: { id: true } }))?.id ?? 0n;
}

/** What is wrong with one answer, or null. */
async function check(path: string, def: ProcedureDef["_def"], c: FuzzCase, role: Role): Promise<string | null> {
  const audited = def.type === "mutation" && def.meta?.pure !== true;
  const before = audited ? await lastAuditId() : 0n;
  const { status, text } = await send(path, def.type, c, role);
  const excerpt = text.slice(0, 300);
  if (status >= 500) return `${status}: ${excerpt}`;
  if (DATABASE_TEXT.test(text)) return `${status} carries database text: ${excerpt}`;
  if (status < 400) return null;
  if (!messageOf(text)) return `${status} without a message: ${excerpt}`;
  if (audited) {
    const entries = await h.db.db.auditEntry.count({ where: { id: { gt: before }, outcome: { not: "ok" } } });
    if (entries === 0) return `${status} refused but not audited`;
  }
  return null;
}

/** Where a case puts its malformation and what kind it is, read from its name (`at: kind`, see `malformedInputs`). */
function partsOf(c: FuzzCase): { at: string; kind: string } {
  const split = c.name.indexOf(": ");
  if (split < 0) return { at: "input", kind: c.name };
  const at = c.name.slice(0, split);
  const kind = c.name.slice(split + 2);
  // "whole input: string NUL" is NUL at the root, as "a.b: NUL" is NUL at a.b.
  if (at === "whole input") return { at: "input", kind: kind.startsWith("string ") ? kind.slice("string ".length) : kind };
  return { at, kind };
}

/** A stable number per procedure, so each one's pick does not move when another is added. */
function seedOf(path: string): number {
  let x = FUZZ_SEED;
  for (const ch of path) x = Math.imul(x ^ ch.charCodeAt(0), 0x9e3779b1) >>> 0;
  return x;
}

/**
 * At most `bound` of `cases` (all of them when there are fewer), in an order the seed
 * shuffles: with `short` each short value at each position, then a case at each position not
 * yet tried (throws if these exceed the bound), then a case of each kind not yet tried while
 * the bound allows, then the seed's pick of the rest. (A given base's positions already get
 * only the short lists: see `malformedInputs`.)
 */
function boundedCases(path: string, cases: FuzzCase[], bound: number, options: { short: boolean }): FuzzCase[] {
  if (cases.length <= bound) return cases;
  const random = prng(seedOf(path));
  const order = cases.map((_, i) => i);
  for (let i = order.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  const chosen = new Set<number>();
  const ats = new Set<string>();
  const kinds = new Set<string>();
  const take = (i: number) => {
    const { at, kind } = partsOf(cases[i]!);
    chosen.add(i);
    ats.add(at);
    kinds.add(kind);
  };
  if (options.short) for (const i of order) if (SHORT.has(partsOf(cases[i]!).kind)) take(i);
  // A new kind along with a new position where the order offers one, so the positions also cover many kinds.
  for (const both of [true, false]) {
    for (const i of order) {
      const { at, kind } = partsOf(cases[i]!);
      if (!chosen.has(i) && !ats.has(at) && (!both || !kinds.has(kind))) take(i);
    }
  }
  if (chosen.size > bound) throw new Error(`${path}: covering every position takes ${chosen.size} cases, over the bound of ${bound}: raise it`);
  for (const i of order) {
    if (chosen.size >= bound) break;
    if (!chosen.has(i) && !kinds.has(partsOf(cases[i]!).kind)) take(i);
  }
  for (const i of order) {
    if (chosen.size >= bound) break;
    chosen.add(i);
  }
  return [...chosen].sort((a, b) => a - b).map((i) => cases[i]!);
}

/** Fuzzing every procedure takes a while on a busy machine: each request is a real one. */
const SLOW = 300_000;

console.log(`fuzz: seed ${FUZZ_SEED}, at most ${ADMIN_CASES} cases per procedure as admin and ${VIEWER_CASES} per mutation as a viewer`);

describe.each(procedures)("%s", (path, procedure) => {
  const def = procedure._def;
  const all = malformedInputs(inputSchemaOf(def.inputs[0]), { base: BASES[path] });
  const cases = boundedCases(path, all, ADMIN_CASES, { short: BASES[path] === undefined });

  it(`as admin: ${cases.length} of ${all.length} malformed inputs (seed ${FUZZ_SEED}), never a 5xx or database text; refused mutations audited`, { timeout: SLOW }, async () => {
    const failures: string[] = [];
    for (const c of cases) {
      const problem = await check(path, def, c, "admin");
      if (problem) failures.push(`${c.name} → ${problem}`);
    }
    expect(failures, `seed ${FUZZ_SEED}`).toEqual([]);
  });
});

describe.each(procedures.filter(([, p]) => p._def.type === "mutation"))("%s as a viewer", (path, procedure) => {
  const def = procedure._def;
  const all = malformedInputs(inputSchemaOf(def.inputs[0])).filter((x) => x.name.startsWith("whole input") || x.name.startsWith("raw"));
  const cases = boundedCases(`${path} as a viewer`, all, VIEWER_CASES, { short: false });

  it(`${cases.length} of ${all.length} malformed inputs (seed ${FUZZ_SEED}): refused with a message (audited unless the procedure is pure), never a 5xx`, { timeout: SLOW }, async () => {
    const failures: string[] = [];
    for (const c of cases) {
      const problem = await check(path, def, c, "viewer");
      if (problem) failures.push(`${c.name} → ${problem}`);
    }
    expect(failures, `seed ${FUZZ_SEED}`).toEqual([]);
  });
});
