import { describe, expect, it } from "vitest";
import { ProviderBreaker, guardProvider, guardRunner, type BreakerChange } from "./breaker";
import { ProviderError, retryAfterMs } from "./errors";
import type { RunnerClient } from "./runner";
import type { SandboxProvider } from "./types";

const refused = () => new ProviderError("unreachable", "GET /sandbox/x", "cannot reach the provider (ECONNREFUSED)");
const notFound = () => new ProviderError("http", "GET /sandbox/x", "HTTP 404", { status: 404 });

function breakerWith(probe: () => Promise<unknown>) {
  const changes: BreakerChange[] = [];
  const breaker = new ProviderBreaker({ probe, baseMs: 20, capMs: 80, onChange: (c) => changes.push(c) });
  return { breaker, changes };
}

describe("the provider breaker (docs/rules.md §2.8)", () => {
  it("opens on an unavailability, probes at once, and stays open while the probes fail, backing off to its cap", async () => {
    const probedAt: number[] = [];
    const { breaker, changes } = breakerWith(async () => {
      probedAt.push(Date.now());
      throw refused();
    });
    breaker.failed(refused());
    expect(breaker.open).toBe(true);
    const reading = await breaker.confirm();
    expect(reading).toMatchObject({ open: true, probes: 1, lastError: expect.stringContaining("ECONNREFUSED") });
    expect(reading.nextProbeAt).not.toBeNull();
    await new Promise((r) => setTimeout(r, 400));
    breaker.stop();
    // 20, 40, 80, 80, … ms apart: doubling, capped.
    const gaps = probedAt.slice(1).map((t, i) => t - probedAt[i]!);
    expect(gaps.length).toBeGreaterThanOrEqual(3);
    expect(gaps[0]).toBeGreaterThanOrEqual(15);
    expect(Math.max(...gaps)).toBeLessThan(80 + 60);
    expect(gaps[2]).toBeGreaterThanOrEqual(70);
    expect(changes[0]).toMatchObject({ to: "open" });
    expect(changes.slice(1).every((c) => c.to === "still_open")).toBe(true);
  });

  it("closes on the first answer of a probe, and a 404 is an answer", async () => {
    let down = true;
    const { breaker, changes } = breakerWith(async () => {
      if (down) throw refused();
      throw notFound();
    });
    breaker.failed(refused());
    expect((await breaker.confirm()).open).toBe(true);
    down = false;
    await new Promise((r) => setTimeout(r, 100));
    expect(breaker.open).toBe(false);
    expect(changes.at(-1)).toMatchObject({ to: "closed", by: "probe" });
    expect(breaker.reading()).toEqual({ open: false, unavailableSince: null, lastError: null, nextProbeAt: null, probes: expect.any(Number), confirmedAt: null, answeredAt: expect.any(String) });
  });

  it("a probe that finds it still unavailable confirms the outage (confirmedAt), the opening call alone does not", async () => {
    const { breaker } = breakerWith(async () => {
      throw refused();
    });
    breaker.failed(refused());
    expect(breaker.reading().confirmedAt).toBeNull();
    const reading = await breaker.confirm();
    expect(reading.confirmedAt).not.toBeNull();
    breaker.stop();
  });

  it("an error the probe does not confirm reads closed (the run's own trouble, not an outage)", async () => {
    const { breaker } = breakerWith(async () => null);
    breaker.failed(new ProviderError("http", "POST /toolbox/x/process/execute", "HTTP 502", { status: 502 }));
    expect(await breaker.confirm()).toMatchObject({ open: false });
  });

  it("ignores what is no answer of the provider's: our own refusal, an abort, a bug", () => {
    const { breaker } = breakerWith(async () => {
      throw refused();
    });
    breaker.failed(refused());
    breaker.failed(new ProviderError("refused", "list", "unscoped"));
    breaker.failed(new ProviderError("aborted", "x", "aborted"));
    breaker.failed(new TypeError("bug"));
    expect(breaker.open).toBe(true);
    breaker.stop();
  });

  it("waits at least the provider's Retry-After before the next probe", async () => {
    let probes = 0;
    const { breaker } = breakerWith(async () => {
      probes += 1;
      throw new ProviderError("http", "GET /sandbox/probe", "HTTP 429", { status: 429, retryAfterMs: 300 });
    });
    breaker.failed(new ProviderError("http", "POST /sandbox", "HTTP 429", { status: 429, retryAfterMs: 0 }));
    await breaker.confirm();
    expect(probes).toBe(1);
    await new Promise((r) => setTimeout(r, 200));
    expect(probes).toBe(1);
    expect(Date.parse(breaker.reading().nextProbeAt!) - Date.now()).toBeGreaterThan(50);
    breaker.stop();
  });

  it("guards every provider call: failures open it, answers close it, pages too", async () => {
    let fail = true;
    const provider = {
      kind: "daytona",
      getById: async () => {
        if (fail) throw refused();
        return null;
      },
      async *listPagesByLabels() {
        yield [];
        if (fail) throw refused();
      },
    } as unknown as SandboxProvider;
    const { breaker } = breakerWith(async () => {
      throw refused();
    });
    const guarded = guardProvider(provider, breaker);
    await expect(guarded.getById("x")).rejects.toThrow("ECONNREFUSED");
    expect(breaker.open).toBe(true);
    fail = false;
    await guarded.getById("x");
    expect(breaker.open).toBe(false);
    fail = true;
    const pages = guarded.listPagesByLabels({ "runwarden.instance": "i" });
    await expect((async () => {
      for await (const _ of pages) void _;
    })()).rejects.toThrow("ECONNREFUSED");
    expect(breaker.open).toBe(true);
    breaker.stop();
  });
});

describe("the breaker is the provider's, not one sandbox's (docs/rules.md §2.8)", () => {
  const toolbox502 = () => new ProviderError("http", "POST process/execute", "HTTP 502", { status: 502, scope: "toolbox" });
  const runnerWith = (call: () => Promise<unknown>) => ({ readState: call }) as unknown as RunnerClient;

  it("a sandbox's toolbox answering 502 opens nothing; confirming it probes the API, which answers: closed, no change", async () => {
    let probes = 0;
    const { breaker, changes } = breakerWith(async () => {
      probes += 1;
      return null;
    });
    const runner = guardRunner(
      runnerWith(async () => {
        throw toolbox502();
      }),
      breaker,
    );
    await expect(runner.readState("sb")).rejects.toThrow("HTTP 502");
    expect(breaker.open).toBe(false);
    expect(await breaker.confirm(toolbox502())).toMatchObject({ open: false, answeredAt: expect.any(String) });
    expect(probes).toBe(1);
    expect(changes).toEqual([]);
  });

  it("a toolbox error whose probe finds the API down opens it, confirmed by that probe", async () => {
    const { breaker, changes } = breakerWith(async () => {
      throw refused();
    });
    const reading = await breaker.confirm(new ProviderError("timeout", "POST process/execute", "no answer", { scope: "toolbox" }));
    expect(reading).toMatchObject({ open: true, probes: 1, lastError: expect.stringContaining("ECONNREFUSED") });
    expect(reading.confirmedAt).toBe(reading.unavailableSince);
    expect(changes.map((c) => c.to)).toEqual(["open"]);
    breaker.stop();
  });

  it("a toolbox call's answer does not close an open breaker (only the API's does)", async () => {
    const { breaker } = breakerWith(async () => {
      throw refused();
    });
    breaker.failed(refused());
    await guardRunner(
      runnerWith(async () => null),
      breaker,
    ).readState("sb");
    expect(breaker.open).toBe(true);
    breaker.stop();
  });

  it("answeredSince probes only when the API has not answered since then", async () => {
    let probes = 0;
    const { breaker } = breakerWith(async () => {
      probes += 1;
      return null;
    });
    const first = await breaker.answeredSince(Date.now());
    expect(probes).toBe(1);
    await breaker.answeredSince(Date.parse(first.answeredAt!) - 1);
    expect(probes).toBe(1);
  });
});

describe("retryAfterMs: the provider's own wait", () => {
  const headers = (h: Record<string, string>) => (n: string) => h[n.toLowerCase()] ?? null;
  it("reads Retry-After in seconds or as a date, else the soonest X-RateLimit-Reset-*", () => {
    expect(retryAfterMs(headers({ "retry-after": "7" }), [])).toBe(7_000);
    expect(retryAfterMs(headers({ "retry-after": new Date(10_000).toUTCString() }), [], 4_000)).toBe(6_000);
    const h = { "x-ratelimit-reset-sandbox-create": "12", "x-ratelimit-reset-sandbox-lifecycle": "3", "x-ratelimit-limit": "10" };
    expect(retryAfterMs(headers(h), Object.keys(h))).toBe(3_000);
    expect(retryAfterMs(headers({ "retry-after": "soon" }), [])).toBeNull();
    expect(retryAfterMs(headers({}), [])).toBeNull();
  });
});
