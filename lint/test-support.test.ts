import { beforeAll, describe, expect, it } from "vitest";
import { lintAt, warmLint } from "./eslint";

/** The rule that keeps test support out of what ships (eslint.config.mjs, ARCHITECTURE.md). */
beforeAll(warmLint, 120_000);

const RULE = "import/no-restricted-paths";

async function ruleIds(code: string, filePath: string): Promise<string[]> {
  return (await lintAt(filePath, `${code}\nexport const x = 1;\n`)).map((m) => m.ruleId ?? m.message);
}

describe("test support never ships", () => {
  it.each([
    ["server/db/probe.ts", 'import { withAdmin } from "../test/db";'],
    ["server/db/probe.ts", 'export { withAdmin } from "../test/db";'],
    ["server/db/probe.ts", 'export const load = () => import("../test/db");'],
    ["server/waves/probe.ts", 'import { startControllerHarness } from "../test/controller";'],
    ["server/engine/probe.ts", 'import { leaseBinding } from "../test/evidence";'],
    ["server/trpc/routers/probe.ts", 'import { startTestEmulator } from "../../test/emulator";'],
    ["scripts/probe.ts", 'import { spawnController } from "../server/test/controller-process";'],
    ["components/probe.tsx", 'import { withAdmin } from "@/server/test/db";'],
    ["app/probe/page.tsx", 'import { withAdmin } from "@/server/test/db";'],
  ])("refuses it in product code: %s with %s", async (filePath, line) => {
    expect(await ruleIds(line, filePath)).toContain(RULE);
  });

  it.each([
    ["server/db/probe.int.test.ts", 'import { withAdmin } from "../test/db";'],
    ["server/engine/probe.test.ts", 'import { leaseBinding } from "../test/evidence";'],
    ["scripts/probe.int.test.ts", 'import { withAdmin } from "../server/test/db";'],
    ["e2e/probe.spec.ts", 'import { withAdmin } from "../server/test/db";'],
    ["server/test/probe.ts", 'import { withAdmin } from "./db";'],
  ])("allows it in tests and test support: %s with %s", async (filePath, line) => {
    expect(await ruleIds(line, filePath)).not.toContain(RULE);
  });

  it("allows product code to import the product launcher and the dead-process identity", async () => {
    const ids = await ruleIds('import { launchController } from "../controller/launch";\nimport { exitedProcessIdentity } from "../process/exited";\nexport const y = [launchController, exitedProcessIdentity];', "server/waves/probe.ts");
    expect(ids).not.toContain(RULE);
  });
});
