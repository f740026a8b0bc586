import { z } from "zod";
import { ProviderError } from "../providers/errors";
import { decodeJson, httpFailure, send, validate } from "../providers/http";
import type { FaultRule, FaultRuleInput } from "./faults";

/**
 * A client for the emulator's admin API, for tests and chaos waves: set and clear faults,
 * plant and inspect sandboxes (all of them, unlike the scoped provider interface), reset.
 */

export interface AdminSandbox {
  id: string;
  name: string;
  labels: Record<string, string>;
  state: string;
  createdAt: string;
  /** Daytona's lastActivityAt: toolbox calls (without the skip-activity header) and lifecycle changes move it. */
  lastActivityAt: string;
  visibleAt: string;
  materialised: boolean;
  destroyedAt: string | null;
  runnerProcess: { state: "running" | "stopped" | "absent"; pid: number | null };
  ingressPort: number | null;
  [key: string]: unknown;
}

export interface PlantInput {
  id?: string;
  name?: string;
  labels?: Record<string, string>;
  cpu?: number;
  memory?: number;
  disk?: number;
  state?: "started" | "stopped" | "archived";
  createdAt?: string;
  /** path → text */
  files?: Record<string, string>;
  runnerState?: Record<string, unknown>;
}

const jsonSchema = z.unknown();

export class EmulatorAdminClient {
  constructor(
    private readonly url: string,
    private readonly apiKey = "emulator-key",
    private readonly timeoutMs = 10_000,
  ) {}

  async setFault(rule: FaultRuleInput): Promise<FaultRule> {
    return (await this.call("POST", "/admin/faults", rule)) as FaultRule;
  }

  async faults(): Promise<FaultRule[]> {
    return ((await this.call("GET", "/admin/faults")) as { faults: FaultRule[] }).faults;
  }

  async clearFaults(id?: string): Promise<number> {
    return ((await this.call("DELETE", id ? `/admin/faults/${encodeURIComponent(id)}` : "/admin/faults")) as { deleted: number }).deleted;
  }

  async sandboxes(options: { includeDestroyed?: boolean } = {}): Promise<AdminSandbox[]> {
    const q = options.includeDestroyed ? "?includeDestroyed=true" : "";
    return ((await this.call("GET", `/admin/sandboxes${q}`)) as { items: AdminSandbox[] }).items;
  }

  async plant(input: PlantInput): Promise<{ id: string; name: string; labels: Record<string, string> }> {
    return (await this.call("POST", "/admin/sandboxes", input)) as { id: string; name: string; labels: Record<string, string> };
  }

  /** Sets a state Daytona reaches on its own: archived / archiving (a stopped sandbox), error / build_failed. */
  async setState(sandboxId: string, state: "archived" | "archiving" | "error" | "build_failed", errorReason?: string, options: { fromStarted?: boolean } = {}): Promise<void> {
    await this.call("POST", `/admin/sandboxes/${encodeURIComponent(sandboxId)}/state`, { state, ...(errorReason ? { errorReason } : {}), ...(options.fromStarted ? { fromStarted: true } : {}) });
  }

  async files(sandboxId: string): Promise<string[]> {
    return ((await this.call("GET", `/admin/sandboxes/${encodeURIComponent(sandboxId)}/files`)) as { files: string[] }).files;
  }

  async configure(config: {
    duplicateNames?: "conflict" | "allow";
    destroyedRetentionMs?: number;
    /** How long creating / starting / stopping / destroying last. */
    transitionMs?: Partial<Record<"create" | "start" | "stop" | "destroy", number>>;
    /** How long one minute of `autoStopInterval` lasts. */
    autoStopMinuteMs?: number;
    /** What the toolbox answers for a deleted sandbox once the proxy's caches forgot it, and when. */
    toolboxGone?: { afterMs?: number; status?: 401 | 400 };
    /** How long a create or start waits for `started` before it answers. */
    serverWaitMs?: number;
    /** Snapshots whose sandboxes have no node on PATH. */
    snapshotsWithoutNode?: string[];
    /** How long a lookup by name's "not found" is kept (Daytona: 10 s). */
    lookupCacheMs?: number;
    /** How long a new sandbox stays out of lists. */
    listLagMs?: number;
  }): Promise<void> {
    await this.call("POST", "/admin/config", config);
  }

  async reset(): Promise<void> {
    await this.call("POST", "/admin/reset", {});
  }

  private async call(method: "GET" | "POST" | "DELETE", path: string, body?: unknown): Promise<unknown> {
    const operation = `${method} ${path}`;
    const res = await send({ method, url: `${this.url.replace(/\/+$/, "")}${path}`, operation, apiKey: this.apiKey, body, timeoutMs: this.timeoutMs });
    if (res.status < 200 || res.status >= 300) throw httpFailure(operation, res);
    const value = validate(operation, decodeJson(operation, res), jsonSchema);
    if (value === null || typeof value !== "object") throw new ProviderError("garbage", operation, "expected a JSON object");
    return value;
  }
}
