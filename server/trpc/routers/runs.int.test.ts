import { describe, expect, it } from "vitest";
import { withTestDatabase } from "../../test/context";
import { createCaller } from "../root";
import { createTRPCContext } from "../trpc";
import { TEST_ADMIN } from "../../test/users";

const t = withTestDatabase();

function caller() {
  return createCaller(() => createTRPCContext({ user: TEST_ADMIN, headers: new Headers(), db: t.current.db }));
}

describe("runs.countByStatus", () => {
  it("counts zero of every status on an empty database", async () => {
    const counts = await caller().runs.countByStatus();
    expect(counts.total).toBe(0);
    expect(Object.values(counts.byStatus).every((n) => n === 0)).toBe(true);
    expect(Object.keys(counts.byStatus).sort()).toEqual(["cancelled", "failed", "queued", "running", "starting", "succeeded", "suspended"]);
  });

  it("counts runs by status", async () => {
    const { db } = t.current;
    await db.instance.create({ data: { id: "inst-a", name: "a" } });
    const base = { instanceId: "inst-a", companyId: "co-1", agent: "a", provider: "codex", target: "remote" as const, sandboxMode: "warm" as const };
    await db.run.createMany({
      data: [
        { ...base, taskId: "t1", status: "running" },
        { ...base, taskId: "t2", status: "failed" },
        { ...base, taskId: "t3", status: "failed" },
        { ...base, taskId: "t4", status: "succeeded" },
      ],
    });
    const counts = await caller().runs.countByStatus();
    expect(counts.total).toBe(4);
    expect(counts.byStatus).toMatchObject({ running: 1, failed: 2, succeeded: 1, queued: 0 });
  });
});
