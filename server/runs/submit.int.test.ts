import { describe, expect, it } from "vitest";
import { ensureInstance } from "../db/installation";
import { withTestDatabase } from "../test/context";
import { submitRun } from "./submit";

const t = withTestDatabase();
const actor = { id: "test", role: "operator" } as const;

describe("submitting on an instance nobody has used yet", () => {
  it("runs submitted at once, while a controller boots on the same instance, all land: none is refused as a task conflict", async () => {
    const db = t.current.db;
    for (let round = 0; round < 5; round++) {
      const instanceId = `inst-new-${round}`;
      const results = await Promise.allSettled([
        ensureInstance(db, instanceId, "rw"), // what a controller's boot does
        ...Array.from({ length: 12 }, (_, i) =>
          submitRun(db, instanceId, { companyId: "co-1", taskId: `task-${round}-${i}`, agent: "a", provider: "codex", turns: 1 }, actor),
        ),
      ]);
      const refused = results.flatMap((r) => (r.status === "rejected" ? [String(r.reason)] : []));
      expect(refused).toEqual([]);
      expect(await db.run.count({ where: { instanceId } })).toBe(12);
      expect(await db.instance.count({ where: { id: instanceId } })).toBe(1);
    }
  });
});
