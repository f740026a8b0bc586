import type { Env } from "../env";
import { emulatorApiKeys, emulatorUrl } from "../emulator/config";
import { DaytonaProvider } from "./daytona";
import { ProviderError } from "./errors";
import { createRunnerClient, type HttpRunnerClientOptions, type RunnerClient } from "./runner";

export interface ConfiguredProvider {
  /** `daytona` when DAYTONA_API_URL is set, otherwise the local emulator. */
  target: "daytona" | "emulator";
  apiUrl: string;
  provider: DaytonaProvider;
  /** Works against the emulator only (see runner.ts). */
  runner: RunnerClient;
}

/**
 * The provider the controller uses: real Daytona when DAYTONA_API_URL (and
 * DAYTONA_API_KEY) are set, else the emulator at EMULATOR_URL with EMULATOR_API_KEY.
 * The same DaytonaProvider code serves both.
 */
export function providerFromEnv(
  env: Pick<Env, "DAYTONA_API_URL" | "DAYTONA_API_KEY" | "DAYTONA_TIMEOUT_MS" | "EMULATOR_URL" | "EMULATOR_PORT" | "EMULATOR_API_KEY">,
  options: { instanceId?: string } = {},
): ConfiguredProvider {
  let target: ConfiguredProvider["target"];
  let apiUrl: string;
  let apiKey: string;
  if (env.DAYTONA_API_URL) {
    if (!env.DAYTONA_API_KEY) throw new ProviderError("refused", "providerFromEnv", "DAYTONA_API_URL is set but DAYTONA_API_KEY is not");
    target = "daytona";
    apiUrl = env.DAYTONA_API_URL;
    apiKey = env.DAYTONA_API_KEY;
  } else {
    target = "emulator";
    apiUrl = emulatorUrl(env);
    apiKey = emulatorApiKeys(env)[0] ?? "emulator-key";
  }
  const provider = new DaytonaProvider({ apiUrl, apiKey, timeoutMs: env.DAYTONA_TIMEOUT_MS, instanceId: options.instanceId });
  const runner = runnerClientFor(provider, { apiKey, timeoutMs: env.DAYTONA_TIMEOUT_MS });
  return { target, apiUrl, provider, runner };
}

/** The runner client that reaches its sandboxes through this provider's toolbox (and asks it whether one is gone). */
export function runnerClientFor(provider: DaytonaProvider, options: Omit<HttpRunnerClientOptions, "toolboxUrl" | "sandboxGone">): RunnerClient {
  return createRunnerClient({
    ...options,
    toolboxUrl: (sandboxId, o) => provider.toolboxUrl(sandboxId, o),
    sandboxGone: (sandboxId, o) => provider.isGone(sandboxId, o),
  });
}
