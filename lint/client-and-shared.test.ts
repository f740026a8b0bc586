import { beforeAll, describe, expect, test } from "vitest";
import { lintAt, warmLint } from "./eslint";

/**
 * The lint rules are the executable form of ARCHITECTURE.md's rooms; these tests run the
 * project's own eslint.config.mjs on small snippets, so each fails if its rule is removed.
 */
beforeAll(warmLint, 120_000);

/** The ids of the rules that report an error on `code` as if it were the file at `file`. */
async function errors(file: string, code: string): Promise<string[]> {
  return (await lintAt(file, code)).filter((m) => m.severity === 2).map((m) => m.ruleId ?? `fatal: ${m.message}`);
}

const CLIENT_RULE = "runwarden/client-imports-shared";

describe("client code imports from the server side only through server/shared", () => {
  test("a component importing the engine's catalogue directly is an error", async () => {
    const code = `import { FAILURE_CODES } from "@/server/engine/catalogue";\nexport const codes = FAILURE_CODES;\n`;
    expect(await errors("components/runs/example.tsx", code)).toContain(CLIENT_RULE);
  });

  test("a component reaching into a read model by a relative path is an error", async () => {
    const code = `import { runDetail } from "../../server/runs/detail";\nexport const f = runDetail;\n`;
    expect(await errors("components/runs/example.tsx", code)).toContain(CLIENT_RULE);
  });

  test("a component importing from server/shared is not", async () => {
    const code = `import { FAILURE_CODES } from "@/server/shared/engine";\nimport { ROLES } from "../../server/shared/roles";\nexport const codes = [FAILURE_CODES, ROLES];\n`;
    expect(await errors("components/runs/example.tsx", code)).toEqual([]);
  });

  test('a "use client" page in app/ importing the database is an error', async () => {
    const code = `"use client";\nimport { db } from "@/server/db";\nexport const x = db;\n`;
    expect(await errors("app/(console)/example/page.tsx", code)).toContain(CLIENT_RULE);
  });

  test("a server component in app/ may import the database and read models", async () => {
    const code = `import { db } from "@/server/db";\nimport { sessionUser } from "@/server/auth/users";\nexport const x = [db, sessionUser];\n`;
    expect(await errors("app/(console)/example/page.tsx", code)).toEqual([]);
  });

  test("a type-only import (no code in the bundle) is allowed in client code", async () => {
    const code = `"use client";\nimport type { AppRouter } from "@/server/trpc/root";\nexport type R = AppRouter;\n`;
    expect(await errors("trpc/example.tsx", code)).toEqual([]);
  });
});

describe("server/shared stays pure", () => {
  test("a shared module importing the database is an error", async () => {
    const code = `import { db } from "../db";\nexport const x = db;\n`;
    expect(await errors("server/shared/example.ts", code)).toContain("no-restricted-imports");
  });

  test("a shared module importing node:fs is an error", async () => {
    const code = `import fs from "node:fs";\nexport const x = fs;\n`;
    expect(await errors("server/shared/example.ts", code)).toContain("no-restricted-imports");
  });

  test("a shared module importing zod, itself and the engine is not", async () => {
    const code = `import { z } from "zod";\nimport { ROLES } from "./roles";\nimport { FAILURE_CODES } from "../engine/catalogue";\nexport const x = [z, ROLES, FAILURE_CODES];\n`;
    expect(await errors("server/shared/example.ts", code)).toEqual([]);
  });
});

describe("the existing rules", () => {
  test("the engine importing Prisma is an error", async () => {
    const code = `import { PrismaClient } from "@prisma/client";\nexport const x = PrismaClient;\n`;
    expect(await errors("server/engine/example.ts", code)).toContain("no-restricted-imports");
  });

  test("the engine importing the database module is an error", async () => {
    const code = `import { db } from "../db";\nexport const x = db;\n`;
    expect(await errors("server/engine/example.ts", code)).toContain("no-restricted-imports");
  });

  test("the engine reading the clock is an error", async () => {
    const code = `export const now = Date.now();\n`;
    expect(await errors("server/engine/example.ts", code)).toContain("no-restricted-syntax");
  });

  test("reading process.env outside server/env.ts is an error", async () => {
    const code = `export const url = process.env.DATABASE_URL;\n`;
    expect(await errors("server/runs/example.ts", code)).toContain("no-restricted-properties");
  });

  test("server/env.ts may read process.env", async () => {
    const code = `export const url = process.env.DATABASE_URL;\n`;
    expect(await errors("server/env.ts", code)).toEqual([]);
  });
});
