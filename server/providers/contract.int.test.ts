import { afterAll, beforeAll, describe, inject, it } from "vitest";
import { startTestEmulator, type TestEmulator } from "../test/emulator";
import { CONTRACT_STEPS, cleanupContract, contractContext, type ContractContext } from "./contract";

/** The provider contract against the emulator; `npm run test:daytona` runs the same steps against real Daytona. */

let t: TestEmulator;
let ctx: ContractContext;

beforeAll(async () => {
  t = await startTestEmulator(inject("adminUrl"), inject("runPrefix"));
  ctx = contractContext({
    label: "emulator",
    makeProvider: ({ instanceId, pageSize }) => t.provider({ instanceId, pageSize }),
    makeRunner: (provider) => t.runner(provider, 30_000),
  });
});

afterAll(async () => {
  if (ctx) await cleanupContract(ctx);
  await t?.close();
});

describe("provider contract (emulator)", () => {
  // Steps share one context and run in order, as they do against Daytona.
  for (const step of CONTRACT_STEPS) it(step.name, () => step.run(ctx), 60_000);
});
