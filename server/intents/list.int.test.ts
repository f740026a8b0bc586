import crypto from "node:crypto";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { IntentStatus, type Prisma } from "../db/client";
import { isUuid } from "../lib/ids";
import { servicesFor } from "../services";
import type { CompanyScope } from "../shared/roles";
import { withTestDatabase } from "../test/context";
import { listIntents, type IntentListInput } from "./queries";

/**
 * intents.list is one SQL statement (docs/decisions/0003-cost-at-scale.md). Over random status, company, search, scope
 * and page size, walking every page must give exactly the intents Prisma finds for the same
 * filters, newest first, each with its lease and its run (a run id that is no uuid, or names
 * no run, has none), the capped total and every status's count; another instance's intents
 * and a company outside the viewer's scope never appear.
 */

const t = withTestDatabase();
const NOW = new Date("2026-11-20T12:00:00.000Z");
const STATUSES = Object.values(IntentStatus);
const COMPANIES = ["co-0", "co-1", "co-2"] as const;
let runId = "";

function pick<T>(xs: readonly T[], i: number): T {
  return xs[i % xs.length] as T;
}

beforeAll(async () => {
  const { db } = t.current;
  await db.instance.create({ data: { id: "inst-i", name: "i" } });
  const run = await db.run.create({ data: { instanceId: "inst-i", companyId: "co-0", taskId: "task-i", agent: "a", provider: "emulator", target: "remote", sandboxMode: "warm", status: "succeeded" } });
  runId = run.id;
  const intents: Prisma.SandboxCreationIntentCreateManyInput[] = [];
  for (let i = 0; i < 90; i++) {
    const instanceId = i % 9 === 8 ? "inst-other" : "inst-i";
    intents.push({
      id: `op-${i % 4 === 0 ? "a_b" : i % 4 === 1 ? "a%b" : "axb"}-${i}`,
      instanceId,
      companyId: pick(COMPANIES, i + (i >> 2)),
      // The run itself, a uuid naming no run, or a probe's id that is no uuid.
      runId: i % 3 === 0 ? runId : i % 3 === 1 ? crypto.randomUUID() : `probe-${i}`,
      creationName: `rw-${instanceId}-${i}`,
      labels: { instance: instanceId },
      creator: { bootId: "boot-gone", pid: 999_999, startedAt: "2026-01-01T00:00:00.000Z", pidSpace: "pid:[1]" },
      status: pick(STATUSES, i * 3 + (i >> 3)),
      // Pairs share a created_at: a page boundary falls between equal keys.
      createdAt: new Date(NOW.getTime() - Math.floor(i / 2) * 60_000),
      settleDeadline: NOW,
      nextAttemptAt: NOW,
    });
  }
  await db.sandboxCreationIntent.createMany({ data: intents });
  const leased = intents.filter((_, i) => i % 5 === 0);
  await db.environmentLease.createMany({
    data: leased.map((x) => ({ instanceId: x.instanceId, companyId: x.companyId, intentId: x.id, provider: "emulator", acquisitionOutcome: "created" as const, status: "expired" as const })),
  });
});

/** What Prisma finds: this instance's intents under the filters, newest first; a search as the characters typed. */
async function expected(input: { status: string; companyId?: string; search?: string }, scope: CompanyScope) {
  const { db } = t.current;
  const rows = await db.sandboxCreationIntent.findMany({
    where: {
      instanceId: "inst-i",
      ...(input.status === "all" ? {} : { status: input.status as IntentStatus }),
      ...(input.companyId ? { companyId: input.companyId } : {}),
      ...(scope.all ? {} : { companyId: { in: scope.companies } }),
      ...(input.companyId && !scope.all ? { AND: [{ companyId: input.companyId }, { companyId: { in: scope.companies } }] } : {}),
    },
    orderBy: [{ createdAt: "desc" }, { id: "desc" }],
    include: { lease: { select: { id: true } } },
  });
  const s = input.search?.toLowerCase();
  const found = rows.filter((r) => !s || [r.id, r.creationName, r.runId].some((x) => x.toLowerCase().includes(s)));
  const runs = await db.run.findMany({ where: { id: { in: [...new Set(found.map((r) => r.runId).filter(isUuid))] } }, select: { id: true, status: true } });
  const byId = new Map(runs.map((r) => [r.id, r]));
  return found.map((r) => ({ id: r.id, companyId: r.companyId, status: r.status, leaseId: r.lease?.id ?? null, run: byId.get(r.runId) ?? null, createdAt: r.createdAt }));
}

const inputArb = fc.record(
  {
    status: fc.constantFrom(...STATUSES, "all" as const),
    companyId: fc.constantFrom(...COMPANIES, "co-9"),
    search: fc.constantFrom("a_b", "a%b", "_", "%", "axb", "probe", "RW-INST-I-1", "op-"),
  },
  { requiredKeys: ["status"] },
);

const scopeArb = fc.constantFrom<CompanyScope>({ all: true }, { all: false, companies: ["co-1"] }, { all: false, companies: ["co-0", "co-2"] }, { all: false, companies: [] });

describe("intents.list as one statement", () => {
  it("pages through exactly Prisma's intents with their lease and run, the total and the counts by status", async () => {
    const observer = servicesFor(t.current.db, "inst-i").observer;
    await fc.assert(
      fc.asyncProperty(inputArb, scopeArb, fc.integer({ min: 5, max: 30 }), async (input, scope, pageSize) => {
        const want = await expected(input, scope);
        const got: typeof want = [];
        let cursor: string | undefined;
        for (let pages = 0; pages < 50; pages++) {
          const page = await listIntents(t.current.db, observer, scope, "inst-i", { ...input, pageSize, ...(cursor ? { cursor } : {}) } satisfies IntentListInput, NOW);
          expect(page).toMatchObject({ instanceId: "inst-i", total: want.length, totalCapped: false, byStatusCapped: [] });
          for (const status of STATUSES) {
            const n = await t.current.db.sandboxCreationIntent.count({ where: { instanceId: "inst-i", status, ...(scope.all ? {} : { companyId: { in: scope.companies } }) } });
            expect(page.byStatus[status]).toBe(n);
          }
          got.push(...page.items.map((i) => ({ id: i.id, companyId: i.companyId, status: i.status, leaseId: i.leaseId, run: i.run, createdAt: i.createdAt })));
          for (const i of page.items) expect(i.sweepWould === null).toBe(i.status !== "pending");
          if (!page.nextCursor) break;
          cursor = page.nextCursor;
        }
        expect(got).toEqual(want);
      }),
      { numRuns: 60 },
    );
  }, 300_000);

  it("reads `_` in a search as itself", async () => {
    const page = await listIntents(t.current.db, servicesFor(t.current.db, "inst-i").observer, { all: true }, "inst-i", { status: "all", search: "a_b", pageSize: 200 }, NOW);
    expect(page.items.length).toBeGreaterThan(0);
    expect(page.items.every((i) => i.id.startsWith("op-a_b-"))).toBe(true);
    expect(page.items.some((i) => i.leaseId !== null && i.run?.id === runId)).toBe(true);
  });
});
