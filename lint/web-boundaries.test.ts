import { beforeAll, describe, expect, it } from "vitest";
import { lintAt, warmLint } from "./eslint";

/**
 * The web's import boundaries (eslint.config.mjs, ARCHITECTURE.md): routers reach neither the
 * controller nor the database; read models do not import the controller. Linted as the real
 * config lints files at these paths, so removing or narrowing a rule fails here.
 */

beforeAll(warmLint, 120_000);

async function boundaryErrors(file: string, code: string): Promise<string[]> {
  return (await lintAt(file, code)).filter((m) => m.ruleId === "@typescript-eslint/no-restricted-imports").map((m) => m.message);
}

const use = (name: string) => `\nexport const used = ${name};\n`;

describe("routers are thin", () => {
  const router = "server/trpc/routers/example.ts";

  it("may not import the controller", async () => {
    expect(await boundaryErrors(router, `import { teardownLease } from "../../controller/teardown";${use("teardownLease")}`)).toEqual([expect.stringContaining("server/services")]);
    expect(await boundaryErrors(router, `import { sweepTeardown } from "@/server/controller/sweeps";${use("sweepTeardown")}`)).toHaveLength(1);
  });

  it("may not query the database itself (a type is allowed)", async () => {
    expect(await boundaryErrors(router, `import { RunStatus } from "../../db/client";${use("RunStatus")}`)).toEqual([expect.stringContaining("read models")]);
    expect(await boundaryErrors(router, `import { db } from "../../db";${use("db")}`)).toHaveLength(1);
    expect(await boundaryErrors(router, `import type { Db } from "../../db/client";\nexport type D = Db;\n`)).toEqual([]);
  });

  it("may import read models and the service module", async () => {
    expect(await boundaryErrors(router, `import { listRuns } from "../../runs/queries";\nimport { servicesFor } from "../../services";${use("[listRuns, servicesFor]")}`)).toEqual([]);
  });
});

describe("read models do not import the controller", () => {
  for (const file of ["server/intents/queries.ts", "server/runs/detail.ts", "server/sandboxes/list.ts", "server/sandboxes/ownership.ts", "server/overview.ts", "server/audit/read.ts"]) {
    it(file, async () => {
      expect(await boundaryErrors(file, `import { judgeExit } from "../controller/observe";${use("judgeExit")}`)).toEqual([expect.stringContaining("Observer")]);
      expect(await boundaryErrors(file, `import type { Observer } from "../services/observer";\nexport type O = Observer;\n`)).toEqual([]);
    });
  }

  it("the orphans page's actions may (they carry out a teardown)", async () => {
    expect(await boundaryErrors("server/sandboxes/reclaim.ts", `import { teardownLease } from "../controller/teardown";${use("teardownLease")}`)).toEqual([]);
  });
});
