/**
 * `npm run test:daytona`: the provider contract (server/providers/contract.ts) against real
 * Daytona, with DAYTONA_API_URL and DAYTONA_API_KEY. Without them it says so in one line and
 * exits 0. It creates a few small sandboxes under a fresh instance label and destroys them.
 */
import { DaytonaProvider } from "../server/providers/daytona";
import { CONTRACT_STEPS, cleanupContract, contractContext } from "../server/providers/contract";
import { runnerClientFor } from "../server/providers/from-env";
import { env } from "../server/env";

const say = (line: string) => process.stdout.write(`${line}\n`);

async function main(): Promise<number> {
  const apiUrl = env.DAYTONA_API_URL;
  const apiKey = env.DAYTONA_API_KEY;
  if (!apiUrl || !apiKey) {
    say("test:daytona skipped: set DAYTONA_API_URL and DAYTONA_API_KEY to run the provider contract against real Daytona");
    return 0;
  }
  const timeoutMs = env.DAYTONA_TIMEOUT_MS;
  const ctx = contractContext({
    label: "daytona",
    makeProvider: ({ instanceId, pageSize }) => new DaytonaProvider({ apiUrl, apiKey, timeoutMs, instanceId, pageSize }),
    makeRunner: (provider) => runnerClientFor(provider, { apiKey, timeoutMs }),
  });
  say(`provider contract against ${apiUrl} (instance label ${ctx.instanceId})`);
  let failed = 0;
  try {
    for (const step of CONTRACT_STEPS) {
      const began = Date.now();
      try {
        await step.run(ctx);
        say(`  ✓ ${step.name} (${Date.now() - began} ms)`);
      } catch (err) {
        failed++;
        say(`  ✗ ${step.name}: ${(err as Error)?.message ?? String(err)}`);
        // Later steps build on earlier ones: stop at the first failure.
        break;
      }
    }
  } finally {
    const problems = await cleanupContract(ctx);
    for (const p of problems) say(`  cleanup: ${p}`);
  }
  say(failed ? `provider contract: FAILED against ${apiUrl}` : `provider contract: all ${CONTRACT_STEPS.length} steps passed against ${apiUrl}`);
  return failed ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    say(`test:daytona: ${(err as Error)?.stack ?? String(err)}`);
    process.exit(1);
  },
);
