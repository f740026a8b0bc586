import { beforeAll, describe, expect, it } from "vitest";
import { lintAt, warmLint } from "./eslint";

/** The project's own lint rules must catch what they exist to catch. */
beforeAll(warmLint, 120_000);

async function ruleIds(code: string, filePath: string): Promise<string[]> {
  return (await lintAt(filePath, code)).map((m) => m.ruleId ?? m.message);
}

describe("engine boundary", () => {
  it.each([
    ['import { PrismaClient } from "@prisma/client";', "Prisma"],
    ['import { db } from "../db";', "the database layer"],
    ['import { initTRPC } from "@trpc/server";', "tRPC"],
    ['import { useState } from "react";', "React"],
    ['import { headers } from "next/headers";', "Next"],
    ['import fs from "node:fs";', "file I/O"],
  ])("refuses %s (%s)", async (line) => {
    const ids = await ruleIds(`${line}\nexport const x = 1;\n`, "server/engine/probe.ts");
    expect(ids).toContain("no-restricted-imports");
  });

  it("refuses a clock or randomness inside the engine", async () => {
    expect(await ruleIds("export const a = Date.now();\n", "server/engine/probe.ts")).toContain("no-restricted-syntax");
    expect(await ruleIds("export const b = new Date();\n", "server/engine/probe.ts")).toContain("no-restricted-syntax");
    expect(await ruleIds("export const c = Math.random();\n", "server/engine/probe.ts")).toContain("no-restricted-syntax");
  });

  it("allows zod and pure code in the engine, and a given time", async () => {
    const ids = await ruleIds('import { z } from "zod";\nexport const s = z.string();\nexport const t = (now: string) => new Date(now);\n', "server/engine/probe.ts");
    expect(ids).toEqual([]);
  });

  it("allows Prisma outside the engine", async () => {
    expect(await ruleIds('import { PrismaClient } from "@prisma/client";\nexport const P = PrismaClient;\n', "server/db/probe.ts")).toEqual([]);
  });
});

describe("one reader of process.env", () => {
  it("refuses process.env outside server/env.ts", async () => {
    expect(await ruleIds("export const u = process.env.DATABASE_URL;\n", "server/db/probe.ts")).toContain("no-restricted-properties");
  });

  it("allows it in server/env.ts", async () => {
    expect(await ruleIds("export const u = process.env.DATABASE_URL;\n", "server/env.ts")).toEqual([]);
  });
});
