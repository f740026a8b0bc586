import { afterAll, beforeAll, inject } from "vitest";
import { createTestDatabase, type TestDatabase } from "./db";

/** Gives the calling test file its own migrated database, dropped after the file. */
export function withTestDatabase(): { readonly current: TestDatabase } {
  const holder: { current?: TestDatabase } = {};
  beforeAll(async () => {
    holder.current = await createTestDatabase(inject("adminUrl"), inject("templateDatabase"), inject("runPrefix"));
  });
  afterAll(async () => {
    await holder.current?.drop();
  });
  return {
    get current() {
      if (!holder.current) throw new Error("test database is not ready (used outside a test?)");
      return holder.current;
    },
  };
}
