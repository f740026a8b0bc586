import { Configuration, SandboxApi } from "@daytonaio/api-client";
import { z } from "zod";
import { ageSeconds, DEFAULT_RATES, hourlyCost, type ResourceRates } from "./cost";
import { ProviderError, retryAfterMs } from "./errors";
import { decodeJson, httpFailure, send, SKIP_ACTIVITY_HEADERS, snippet, validate } from "./http";
import { hasLabels, LABEL_KEYS } from "./labels";
import type { CreateSandboxInput, DestroyOutcome, SandboxProvider, SandboxView, ViewOptions } from "./types";

/**
 * The Daytona provider: Daytona's public REST API through `@daytonaio/api-client`
 * (pinned; its methods are long positional lists, so every call to it lives here).
 * The same code runs against the local emulator (server/emulator), which implements the
 * subset used here (DAYTONA.md).
 */

export interface DaytonaProviderOptions {
  /** API base, e.g. https://app.daytona.io/api or the emulator's http://127.0.0.1:3901. */
  apiUrl: string;
  apiKey: string;
  /** Bound on each request (the client sets none). */
  timeoutMs?: number;
  /** When set, creates and lists must carry exactly this instance label. */
  instanceId?: string;
  /** Sent as X-Daytona-Organization-ID; only needed with a JWT instead of an API key. */
  organizationId?: string;
  rates?: ResourceRates;
  clock?: () => Date;
  /** Page size for listByLabels and listPagesByLabels. */
  pageSize?: number;
  /** Stops a list whose cursor never ends (a provider bug) instead of looping forever. */
  maxPages?: number;
  /** Bound on waiting for a lifecycle transition (creating → started, start, stop). */
  transitionTimeoutMs?: number;
}

/** States a sandbox passes through on its way to `started` (wait, do not act). */
/**
 * How long Daytona's `POST /sandbox` and `POST /sandbox/{id}/start` wait for `started` before
 * they answer (sandbox.controller.ts, `waitForSandboxStarted(…, 30)` at v0.190.0).
 */
export const DAYTONA_SERVER_WAIT_MS = 30_000;

const STARTING_STATES = new Set(["creating", "starting", "restoring", "pulling_snapshot", "pending_build", "building_snapshot", "resuming"]);
/** What `POST /sandbox/{id}/start` accepts (Daytona's sandbox.service.ts start(), at v0.190.0). */
const STARTABLE_STATES = new Set(["stopped", "archived", "archiving"]);

/**
 * On its way to `started`: a starting state, or an archived (archiving) one whose start was
 * asked — Daytona's answer keeps `archived` with desired state `started` while it restores.
 */
function isComingUp(view: { state?: string | null; desiredState?: string | null }): boolean {
  const state = view.state ?? "";
  return STARTING_STATES.has(state) || ((state === "archived" || state === "archiving") && view.desiredState === "started");
}

export type EnsureStartedOutcome =
  /** It was already started (or became so on its own). */
  | "already_started"
  /** It was stopped (auto-stop, an outage) and this call started it again. */
  | "restarted";

/** The subset of Daytona's Sandbox that Runwarden relies on; the rest is ignored. */
const sandboxSchema = z.object({
  id: z.string().min(1),
  name: z.string(),
  labels: z.record(z.string(), z.string()).nullish(),
  state: z.string().nullish(),
  desiredState: z.string().nullish(),
  errorReason: z.string().nullish(),
  cpu: z.number().nullish(),
  memory: z.number().nullish(),
  disk: z.number().nullish(),
  createdAt: z.string().refine((v) => Number.isFinite(Date.parse(v)), "expected an ISO date"),
  toolboxProxyUrl: z.string().nullish(),
  snapshot: z.string().nullish(),
});
type RawSandbox = z.infer<typeof sandboxSchema>;

const listSchema = z.object({
  items: z.array(sandboxSchema),
  nextCursor: z.string().nullish(),
});

const toolboxUrlSchema = z.object({ url: z.string().min(1) });
const homeDirSchema = z.object({ dir: z.string().min(1) });

/**
 * listSandboxes' positional parameters in api-client 0.220.0 (the options object follows
 * them). A test checks this against the installed client, so an upgrade that reorders
 * them fails loudly instead of sending labels as something else.
 */
export const LIST_SANDBOXES_PARAMS = [
  "xDaytonaOrganizationID",
  "cursor",
  "limit",
  "id",
  "name",
  "labels",
  "includeErroredDeleted",
  "includeWarm",
  "states",
  "snapshots",
  "regionIds",
  "sandboxClasses",
  "minCpu",
  "maxCpu",
  "minMemoryGiB",
  "maxMemoryGiB",
  "minDiskGiB",
  "maxDiskGiB",
  "minGpu",
  "maxGpu",
  "isPublic",
  "isRecoverable",
  "createdAtAfter",
  "createdAtBefore",
  "lastEventAfter",
  "lastEventBefore",
  "autoDestroyAtAfter",
  "autoDestroyAtBefore",
  "sort",
  "order",
] as const;

/** The positional parameters before the options object. */
type ListParams = Parameters<SandboxApi["listSandboxes"]> extends [...infer Head, RawOptions?] ? Head : never;
type RawOptions = Parameters<SandboxApi["getSandbox"]>[3];

export class DaytonaProvider implements SandboxProvider {
  readonly kind = "daytona" as const;
  readonly apiUrl: string;
  private readonly api: SandboxApi;
  private readonly apiKey: string;
  private readonly timeoutMs: number;
  private readonly instanceId: string | undefined;
  private readonly organizationId: string | undefined;
  private readonly rates: ResourceRates;
  private readonly clock: () => Date;
  private readonly pageSize: number;
  private readonly maxPages: number;
  private readonly toolboxUrls = new Map<string, string>();
  private readonly transitionTimeoutMs: number;
  /** Create and start wait server-side for `started` (up to DAYTONA_SERVER_WAIT_MS): their requests get longer than that. */
  private readonly lifecycleTimeoutMs: number;

  constructor(options: DaytonaProviderOptions) {
    if (!options.apiUrl) throw new ProviderError("refused", "DaytonaProvider", "apiUrl is required (DAYTONA_API_URL)");
    if (!options.apiKey) throw new ProviderError("refused", "DaytonaProvider", "apiKey is required (DAYTONA_API_KEY)");
    this.apiUrl = options.apiUrl.replace(/\/+$/, "");
    this.apiKey = options.apiKey;
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.instanceId = options.instanceId;
    this.organizationId = options.organizationId;
    this.rates = options.rates ?? DEFAULT_RATES;
    this.clock = options.clock ?? (() => new Date());
    this.pageSize = options.pageSize ?? 100;
    this.maxPages = options.maxPages ?? 1000;
    this.transitionTimeoutMs = options.transitionTimeoutMs ?? 120_000;
    this.lifecycleTimeoutMs = Math.max(this.timeoutMs, DAYTONA_SERVER_WAIT_MS + 15_000);
    // basePath is used verbatim: the client adds no /api prefix (DAYTONA.md).
    const configuration = new Configuration({
      basePath: this.apiUrl,
      accessToken: this.apiKey,
      baseOptions: { timeout: this.timeoutMs },
    });
    this.api = new SandboxApi(configuration);
  }

  async create(input: CreateSandboxInput, options: ViewOptions = {}): Promise<SandboxView> {
    const operation = `POST /sandbox (${input.name})`;
    if (!input.name) throw new ProviderError("refused", operation, "a sandbox needs an exact name");
    this.checkScope(operation, input.labels);
    const body: Parameters<SandboxApi["createSandbox"]>[0] = { name: input.name, labels: input.labels };
    // Resources only when asked: Daytona rejects them for snapshots with fixed sizes.
    if (input.cpu !== undefined) body.cpu = input.cpu;
    if (input.memory !== undefined) body.memory = input.memory;
    if (input.disk !== undefined) body.disk = input.disk;
    // The idle policy (docs/rules.md §4, "The sandbox idle policy"): daytonaio/daytona v0.190.0 apps/api/src/sandbox/dto/create-sandbox.dto.ts.
    if (input.autoStopInterval !== undefined) body.autoStopInterval = input.autoStopInterval;
    if (input.autoDeleteInterval !== undefined) body.autoDeleteInterval = input.autoDeleteInterval;
    if (input.snapshot !== undefined) body.snapshot = input.snapshot;
    const signal = input.signal ?? options.signal;
    const data = await this.call(operation, signal, () =>
      this.api.createSandbox(body, this.organizationId, { signal, timeout: this.lifecycleTimeoutMs }),
    );
    const raw = validate(operation, data, sandboxSchema, "the created sandbox");
    if (raw.name !== input.name) {
      throw new ProviderError("garbage", operation, `asked for the name ${JSON.stringify(input.name)}, the provider named it ${JSON.stringify(raw.name)}`);
    }
    return this.view(raw, options.now);
  }

  async getByName(name: string, options: ViewOptions = {}): Promise<SandboxView | null> {
    const operation = `GET /sandbox/${name}`;
    if (!name) throw new ProviderError("refused", operation, "a name is required");
    const data = await this.callOrNull(operation, options.signal, () =>
      this.api.getSandbox(name, this.organizationId, undefined, { signal: options.signal, timeout: this.timeoutMs }),
    );
    if (data === null) return null;
    const raw = validate(operation, data, sandboxSchema, "the sandbox");
    // Daytona's GET takes an id or a name; only an exact name match is the sandbox asked for.
    if (raw.name !== name) {
      throw new ProviderError("garbage", operation, `asked for the name ${JSON.stringify(name)}, got a sandbox named ${JSON.stringify(raw.name)}`);
    }
    return this.view(raw, options.now);
  }

  async listByLabels(labels: Record<string, string>, options: ViewOptions = {}): Promise<SandboxView[]> {
    const out: SandboxView[] = [];
    for await (const page of this.listPagesByLabels(labels, options)) out.push(...page);
    return out;
  }

  async *listPagesByLabels(labels: Record<string, string>, options: ViewOptions = {}): AsyncGenerator<SandboxView[], void, undefined> {
    const operation = "GET /sandbox?labels=…";
    if (!labels || Object.keys(labels).length === 0) {
      throw new ProviderError("refused", operation, "an unscoped (provider-wide) list is not allowed: pass this instance's labels");
    }
    if (!labels[LABEL_KEYS.instance]) {
      throw new ProviderError("refused", operation, `a list must be scoped by the ${LABEL_KEYS.instance} label`);
    }
    this.checkScope(operation, labels);
    const encoded = JSON.stringify(labels);
    const seenCursors = new Set<string>();
    let cursor: string | undefined;
    for (let page = 0; ; page++) {
      if (page >= this.maxPages) {
        throw new ProviderError("garbage", operation, `the list did not end after ${this.maxPages} pages`);
      }
      // Daytona's default order (last activity, newest first) moves under load: page by creation.
      const args = listArgs({ xDaytonaOrganizationID: this.organizationId, cursor, limit: this.pageSize, labels: encoded, sort: "createdAt", order: "asc" });
      const data = await this.call(operation, options.signal, () =>
        this.api.listSandboxes(...args, { signal: options.signal, timeout: this.timeoutMs }),
      );
      if (Array.isArray(data)) {
        throw new ProviderError("garbage", operation, "expected { items, nextCursor }, got a plain array (an older Daytona API than the pinned client)");
      }
      const list = validate(operation, data, listSchema, "the list");
      // Defence in depth: a provider that ignored the filter must not widen the scope.
      const views = list.items.filter((raw) => hasLabels(raw.labels ?? {}, labels)).map((raw) => this.view(raw, options.now));
      const next = list.nextCursor ?? null;
      // Checked before the page is handed out: a garbage cursor fails the listing, it does not follow the page.
      if (next && list.items.length > 0 && seenCursors.has(next)) throw new ProviderError("garbage", operation, `the list repeated the cursor ${snippet(next)}`);
      if (views.length > 0) yield views;
      if (!next || list.items.length === 0) return;
      seenCursors.add(next);
      cursor = next;
    }
  }

  async destroy(id: string, options: { signal?: AbortSignal } = {}): Promise<{ outcome: DestroyOutcome }> {
    const operation = `DELETE /sandbox/${id}`;
    if (!id) throw new ProviderError("refused", operation, "an id is required");
    let data: unknown;
    const deadline = Date.now() + this.transitionTimeoutMs;
    for (let delay = 50; ; delay = Math.min(delay * 2, 1000)) {
      try {
        data = await this.callOrNull(operation, options.signal, () =>
          this.api.deleteSandbox(id, this.organizationId, { signal: options.signal, timeout: this.timeoutMs }),
        );
        break;
      } catch (err) {
        // 409 "state change in progress": Daytona refuses a delete while the sandbox changes state.
        if (!(ProviderError.is(err) && err.kind === "http" && err.status === 409)) throw err;
        const now = await this.getById(id, options);
        // An earlier delete still under way: gone all the same.
        if (now === null || now.desiredState === "destroyed" || now.state === "destroying" || now.state === "destroyed") {
          data = null;
          break;
        }
        // Creating, starting or stopping (or just done with it): delete again once that has ended.
        if (Date.now() + delay > deadline) throw err;
        await abortableSleep(delay, options.signal, operation);
      }
    }
    this.toolboxUrls.delete(id);
    this.homes.delete(id);
    return { outcome: data === null ? "already_gone" : "destroyed" };
  }

  async readFile(sandboxId: string, relOrAbs: string, options: { signal?: AbortSignal } = {}): Promise<string | null> {
    const toolbox = await this.toolboxUrl(sandboxId, options);
    if (toolbox === null) return null;
    // A relative path is under the sandbox user's home, asked of the sandbox (never assumed).
    const home = relOrAbs.startsWith("/") ? null : await this.homeDir(sandboxId, options);
    const path = home === null ? relOrAbs : `${home}/${relOrAbs}`;
    const operation = `GET files/download?path=${path}`;
    const url = `${toolbox}/${encodeURIComponent(sandboxId)}/files/download?path=${encodeURIComponent(path)}`;
    let res;
    try {
      // A file read only looks: not the sandbox's activity (SKIP_ACTIVITY_HEADERS).
      res = await send({ method: "GET", url, operation, apiKey: this.apiKey, headers: SKIP_ACTIVITY_HEADERS, timeoutMs: this.timeoutMs, signal: options.signal });
    } catch (err) {
      if (ProviderError.is(err) && err.kind === "unreachable") this.toolboxUrls.delete(sandboxId);
      throw err;
    }
    if (res.status === 404) return null;
    if ((res.status === 400 || res.status === 401) && (await this.isGone(sandboxId, options))) return null;
    if (res.status < 200 || res.status >= 300) throw httpFailure(operation, res);
    // Raw bytes (DAYTONA.md): decode as UTF-8 text.
    return res.body.toString("utf8");
  }

  private readonly homes = new Map<string, string>();

  /** The sandbox user's home (`GET /user-home-dir`), cached per sandbox; null when it does not exist. */
  async homeDir(sandboxId: string, options: { signal?: AbortSignal } = {}): Promise<string | null> {
    const cached = this.homes.get(sandboxId);
    if (cached) return cached;
    const toolbox = await this.toolboxUrl(sandboxId, options);
    if (toolbox === null) return null;
    const operation = "GET /user-home-dir";
    const res = await send({
      method: "GET",
      url: `${toolbox}/${encodeURIComponent(sandboxId)}/user-home-dir`,
      operation,
      apiKey: this.apiKey,
      headers: SKIP_ACTIVITY_HEADERS,
      timeoutMs: this.timeoutMs,
      signal: options.signal,
    });
    if (res.status === 404) return null;
    if ((res.status === 400 || res.status === 401) && (await this.isGone(sandboxId, options))) return null;
    if (res.status < 200 || res.status >= 300) throw httpFailure(operation, res);
    const dir = validate(operation, decodeJson(operation, res), homeDirSchema, "the home directory").dir.replace(/\/+$/, "");
    this.homes.set(sandboxId, dir);
    return dir;
  }

  /**
   * Whether the API says the sandbox is gone (no such sandbox, or destroyed / being destroyed):
   * what a toolbox 400 or 401 means for a deleted sandbox once Daytona's proxy caches forget it
   * (apps/proxy/pkg/proxy/get_sandbox_target.go, auth.go at v0.190.0). Its cached toolbox
   * URL and home go with it.
   */
  async isGone(sandboxId: string, options: { signal?: AbortSignal } = {}): Promise<boolean> {
    const view = await this.getById(sandboxId, { signal: options.signal });
    const gone = view === null || view.state === "destroyed" || view.state === "destroying" || view.desiredState === "destroyed";
    if (gone) {
      this.toolboxUrls.delete(sandboxId);
      this.homes.delete(sandboxId);
    }
    return gone;
  }

  /** A sandbox by id, or null when it does not exist. */
  async getById(id: string, options: ViewOptions = {}): Promise<SandboxView | null> {
    const operation = `GET /sandbox/${id}`;
    const data = await this.callOrNull(operation, options.signal, () =>
      this.api.getSandbox(id, this.organizationId, undefined, { signal: options.signal, timeout: this.timeoutMs }),
    );
    if (data === null) return null;
    const raw = validate(operation, data, sandboxSchema, "the sandbox");
    if (raw.id !== id) throw new ProviderError("garbage", operation, `asked for the id ${JSON.stringify(id)}, got ${JSON.stringify(raw.id)}`);
    return this.view(raw, options.now);
  }

  /** Starts a stopped sandbox by id and waits until it is `started` (Daytona passes through `starting`). */
  async start(id: string, options: ViewOptions = {}): Promise<SandboxView> {
    const operation = `POST /sandbox/${id}/start`;
    const data = await this.call(operation, options.signal, () =>
      this.api.startSandbox(id, this.organizationId, { signal: options.signal, timeout: this.lifecycleTimeoutMs }),
    );
    const view = this.view(validate(operation, data, sandboxSchema, "the sandbox"), options.now);
    return view.state === "started" ? view : this.waitFor(id, "started", options);
  }

  /** Stops a sandbox and waits until it is `stopped`; its processes (the runner) end. */
  async stop(id: string, options: ViewOptions = {}): Promise<SandboxView> {
    const operation = `POST /sandbox/${id}/stop`;
    const data = await this.call(operation, options.signal, () =>
      this.api.stopSandbox(id, this.organizationId, false, { signal: options.signal, timeout: this.timeoutMs }),
    );
    const view = this.view(validate(operation, data, sandboxSchema, "the sandbox"), options.now);
    return view.state === "stopped" ? view : this.waitFor(id, "stopped", options);
  }

  /**
   * Makes sure a sandbox is `started` before work goes on in it: a stopped one (auto-stop
   * while the controller was down) is started again (`POST /sandbox/{id}/start`), one on its
   * way up or down is waited for. Throws a `refused` ProviderError for a sandbox that cannot
   * be started (destroyed, error, archived…) and a 404 one when it does not exist.
   */
  async ensureStarted(id: string, options: ViewOptions = {}): Promise<{ outcome: EnsureStartedOutcome; before: string; sandbox: SandboxView }> {
    const operation = `ensure ${id} started`;
    let view = await this.getById(id, options);
    if (view === null) throw new ProviderError("http", operation, `sandbox ${id} does not exist`, { status: 404, code: "sandbox_not_found" });
    const before = view.state;
    if (isComingUp(view)) view = await this.waitFor(id, "started", options);
    if (view.state === "stopping") view = await this.waitFor(id, "stopped", options);
    if (view.state === "started") return { outcome: "already_started", before, sandbox: view };
    // Daytona starts a stopped, an archived and an archiving sandbox (sandbox.service.ts start());
    // an archived one is restored first (its processes, like a stopped one's, are gone).
    if (!STARTABLE_STATES.has(view.state)) throw new ProviderError("refused", operation, `sandbox ${id} is ${view.state}: it cannot be started${view.errorReason ? ` (${view.errorReason})` : ""}`);
    return { outcome: "restarted", before, sandbox: await this.start(id, options) };
  }

  /** Polls until the sandbox reaches `target`; a state it cannot pass through on the way ends the wait. */
  private async waitFor(id: string, target: "started" | "stopped", options: ViewOptions): Promise<SandboxView> {
    const operation = `wait for ${id} ${target}`;
    const deadline = Date.now() + this.transitionTimeoutMs;
    for (let delay = 50; ; delay = Math.min(delay * 2, 1000)) {
      const view = await this.getById(id, options);
      if (view === null) throw new ProviderError("http", operation, `sandbox ${id} does not exist`, { status: 404, code: "sandbox_not_found" });
      if (view.state === target) return view;
      const passing = target === "started" ? isComingUp(view) : view.state === "stopping";
      if (!passing) throw new ProviderError("refused", operation, `sandbox ${id} is ${view.state}, not ${target}${view.errorReason ? `: ${view.errorReason}` : ""}`);
      if (Date.now() + delay > deadline) throw new ProviderError("timeout", operation, `still ${view.state} after ${this.transitionTimeoutMs} ms`);
      await abortableSleep(delay, options.signal, operation);
    }
  }

  /**
   * The sandbox's toolbox proxy base (for files and the emulated runner), or null when the
   * sandbox does not exist. Uses the Sandbox's `toolboxProxyUrl`, else asks for it.
   */
  async toolboxUrl(sandboxId: string, options: { signal?: AbortSignal } = {}): Promise<string | null> {
    const cached = this.toolboxUrls.get(sandboxId);
    if (cached) return cached;
    const operation = `GET /sandbox/${sandboxId}`;
    const data = await this.callOrNull(operation, options.signal, () =>
      this.api.getSandbox(sandboxId, this.organizationId, undefined, { signal: options.signal, timeout: this.timeoutMs }),
    );
    if (data === null) return null;
    let raw = validate(operation, data, sandboxSchema, "the sandbox");
    // Toolbox calls need `started`: wait out `creating` (and other ways up) first.
    if (isComingUp(raw)) {
      const started = await this.waitFor(sandboxId, "started", options);
      raw = { ...raw, state: started.state, toolboxProxyUrl: started.toolboxProxyUrl ?? raw.toolboxProxyUrl };
    }
    let url = raw.toolboxProxyUrl ?? "";
    if (!url) {
      const proxyOp = `GET /sandbox/${sandboxId}/toolbox-proxy-url`;
      const proxy = await this.call(proxyOp, options.signal, () =>
        this.api.getToolboxProxyUrl(sandboxId, this.organizationId, { signal: options.signal, timeout: this.timeoutMs }),
      );
      url = validate(proxyOp, proxy, toolboxUrlSchema, "the toolbox proxy URL").url;
    }
    url = url.replace(/\/+$/, "");
    this.toolboxUrls.set(sandboxId, url);
    return url;
  }

  private checkScope(operation: string, labels: Record<string, string>) {
    const instance = labels[LABEL_KEYS.instance];
    if (!instance) throw new ProviderError("refused", operation, `labels must carry ${LABEL_KEYS.instance}`);
    if (this.instanceId !== undefined && instance !== this.instanceId) {
      throw new ProviderError("refused", operation, `labels name instance ${JSON.stringify(instance)}, this provider serves ${JSON.stringify(this.instanceId)}`);
    }
  }

  private view(raw: RawSandbox, now?: Date): SandboxView {
    const resources = { cpu: raw.cpu ?? 0, memory: raw.memory ?? 0, disk: raw.disk ?? 0 };
    return {
      id: raw.id,
      name: raw.name,
      labels: { ...(raw.labels ?? {}) },
      state: raw.state ?? "unknown",
      desiredState: raw.desiredState ?? null,
      errorReason: raw.errorReason ?? null,
      createdAt: new Date(raw.createdAt).toISOString(),
      ageSeconds: ageSeconds(raw.createdAt, now ?? this.clock()),
      ...resources,
      hourlyCost: hourlyCost(resources, this.rates),
      toolboxProxyUrl: raw.toolboxProxyUrl ? raw.toolboxProxyUrl.replace(/\/+$/, "") : null,
      snapshot: raw.snapshot ?? null,
    };
  }

  private async call(operation: string, signal: AbortSignal | undefined, fn: () => Promise<{ data: unknown }>): Promise<unknown> {
    try {
      return (await fn()).data;
    } catch (err) {
      throw axiosFailure(operation, err, signal, this.timeoutMs);
    }
  }

  /** Like call, with 404 as null. */
  private async callOrNull(operation: string, signal: AbortSignal | undefined, fn: () => Promise<{ data: unknown }>): Promise<unknown> {
    try {
      return await this.call(operation, signal, fn);
    } catch (err) {
      if (ProviderError.is(err) && err.kind === "http" && err.status === 404) return null;
      throw err;
    }
  }
}

export function createDaytonaProvider(options: DaytonaProviderOptions): DaytonaProvider {
  return new DaytonaProvider(options);
}

function abortableSleep(ms: number, signal: AbortSignal | undefined, operation: string): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new ProviderError("aborted", operation, "the caller aborted the wait"));
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    function onAbort() {
      clearTimeout(timer);
      reject(new ProviderError("aborted", operation, "the caller aborted the wait"));
    }
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

function listArgs(named: Partial<Record<(typeof LIST_SANDBOXES_PARAMS)[number], unknown>>): ListParams {
  const args: unknown[] = LIST_SANDBOXES_PARAMS.map((name) => named[name]);
  return args as ListParams;
}

interface AxiosLikeError {
  isAxiosError?: boolean;
  code?: string;
  message?: string;
  response?: { status: number; data?: unknown; headers?: Record<string, unknown> };
}

/** Turns an axios failure into a ProviderError that says what happened. */
function axiosFailure(operation: string, err: unknown, signal: AbortSignal | undefined, timeoutMs: number): ProviderError {
  if (ProviderError.is(err)) return err;
  const e = err as AxiosLikeError;
  if (!e || !e.isAxiosError) {
    return new ProviderError("garbage", operation, `unexpected client failure: ${(err as Error)?.message ?? String(err)}`, { cause: err });
  }
  // The caller's own deadline (AbortSignal.timeout) is a timeout, not an abort: no answer came in time.
  if (signal?.aborted && (signal.reason as { name?: unknown } | undefined)?.name === "TimeoutError") {
    return new ProviderError("timeout", operation, "no answer within the caller's deadline", { cause: err });
  }
  if (e.code === "ERR_CANCELED" || signal?.aborted) {
    return new ProviderError("aborted", operation, "the caller aborted the request", { cause: err });
  }
  if (e.code === "ECONNABORTED" || e.code === "ETIMEDOUT") {
    return new ProviderError("timeout", operation, `no answer within ${timeoutMs} ms`, { cause: err });
  }
  const res = e.response;
  if (!res) {
    return new ProviderError("unreachable", operation, `cannot reach the provider (${e.code ?? e.message ?? "no answer"})`, { cause: err });
  }
  const contentType = String(res.headers?.["content-type"] ?? "");
  let message = "";
  let code: string | null = null;
  const body = res.data;
  if (body && typeof body === "object" && !Array.isArray(body)) {
    const b = body as { message?: unknown; error?: unknown; code?: unknown };
    if (typeof b.message === "string") message = b.message;
    else if (Array.isArray(b.message)) message = b.message.join("; ");
    else if (typeof b.error === "string") message = b.error;
    if (typeof b.code === "string") code = b.code;
  }
  return new ProviderError(
    "http",
    operation,
    `HTTP ${res.status}${message ? `: ${message}` : ` with ${contentType || "no content type"}: ${snippet(body)}`}`,
    { status: res.status, code, cause: err, retryAfterMs: res.status === 429 || res.status === 503 ? retryAfterMs((n) => headerText(res.headers?.[n]), Object.keys(res.headers ?? {})) : null },
  );
}

function headerText(v: unknown): string | null {
  return typeof v === "string" ? v : typeof v === "number" ? String(v) : null;
}
