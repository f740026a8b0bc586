import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { inject } from "vitest";
import { readEnv } from "../env";
import { createTestDatabase, type TestDatabase } from "../test/db";
import { resolveInstanceId } from "./installation";

/** The instance id is per installation (docs/rules.md §2.9): never a default two installations share. */

let a: TestDatabase;
let b: TestDatabase;
beforeAll(async () => {
  const make = () => createTestDatabase(inject("adminUrl"), inject("templateDatabase"), inject("runPrefix"));
  a = await make();
  b = await make();
});
afterAll(async () => {
  await a?.drop();
  await b?.drop();
});

describe("instance id", () => {
  it("has no shared default in the environment", () => {
    expect(readEnv({}).RUNWARDEN_INSTANCE_ID).toBeUndefined();
  });

  it("is generated once per database and kept; two databases get different ids; several first askers agree", async () => {
    const first = await Promise.all([1, 2, 3, 4].map(() => resolveInstanceId(a.db)));
    expect(new Set(first).size).toBe(1);
    expect(first[0]).toMatch(/^inst-[0-9a-f]{12}$/);
    expect(await resolveInstanceId(a.db)).toBe(first[0]);
    const other = await resolveInstanceId(b.db);
    expect(other).not.toBe(first[0]);
  });

  it("an explicit RUNWARDEN_INSTANCE_ID wins and leaves the kept id alone", async () => {
    const kept = await resolveInstanceId(a.db);
    expect(await resolveInstanceId(a.db, "inst-explicit")).toBe("inst-explicit");
    expect(await resolveInstanceId(a.db)).toBe(kept);
  });
});
