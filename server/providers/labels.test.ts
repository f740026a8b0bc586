import { SandboxApi } from "@daytonaio/api-client";
import { describe, expect, it } from "vitest";
import { DaytonaProvider, LIST_SANDBOXES_PARAMS } from "./daytona";
import { ageSeconds, buildLabels, creationName, DEFAULT_RATES, hourlyCost, instanceScope, LABEL_KEYS, normaliseLabels, ProviderError } from "./types";

// Port 9 (discard) on loopback: any request that did get sent would fail as unreachable.
const nowhere = new DaytonaProvider({ apiUrl: "http://127.0.0.1:9", apiKey: "k", timeoutMs: 500, instanceId: "inst-a" });

describe("labels", () => {
  it("builds the runwarden.* labels and normalises them to the creation_intent shape", () => {
    const labels = buildLabels({ instanceId: "inst-a", companyId: "co-1", operationId: "op-1", runId: "r-1" });
    expect(labels).toEqual({
      "runwarden.instance": "inst-a",
      "runwarden.company": "co-1",
      "runwarden.operation": "op-1",
      "runwarden.run": "r-1",
    });
    expect(normaliseLabels(labels)).toEqual({ instance: "inst-a", company: "co-1", operation: "op-1" });
    expect(normaliseLabels({ other: "x" })).toEqual({ instance: null, company: null, operation: null });
    expect(normaliseLabels(undefined)).toEqual({ instance: null, company: null, operation: null });
    expect(instanceScope("inst-a")).toEqual({ [LABEL_KEYS.instance]: "inst-a" });
    expect(instanceScope("inst-a", "co-1")).toEqual({ [LABEL_KEYS.instance]: "inst-a", [LABEL_KEYS.company]: "co-1" });
    expect(() => buildLabels({ instanceId: "", companyId: "co-1" })).toThrow(/instanceId/);
  });

  it("makes exact creation names <prefix>-create-<operationId>", () => {
    expect(creationName("rw", "op-1")).toBe("rw-create-op-1");
    expect(creationName("rw", "0b6a3c1e-2f7d-4e55-9a51-0c9a8f9d2b10")).toBe("rw-create-0b6a3c1e-2f7d-4e55-9a51-0c9a8f9d2b10");
    expect(() => creationName("rw", "op 1")).toThrow(ProviderError);
    expect(() => creationName("", "op-1")).toThrow(/prefix/);
  });
});

describe("cost and age", () => {
  it("prices resources at the documented rates", () => {
    expect(hourlyCost({ cpu: 1, memory: 1, disk: 3 })).toBeCloseTo(0.0504 + 0.0162 + 3 * 0.000108, 6);
    expect(hourlyCost({ cpu: 4, memory: 8, disk: 10 })).toBeCloseTo(4 * 0.0504 + 8 * 0.0162 + 10 * 0.000108, 6);
    expect(hourlyCost({ cpu: 2, memory: 2, disk: 0 }, { cpuPerHour: 1, memoryGiBPerHour: 0.5, diskGiBPerHour: 0 })).toBe(3);
    expect(DEFAULT_RATES.cpuPerHour).toBe(0.0504);
  });

  it("computes age against the given now, never negative", () => {
    const created = "2026-11-12T00:00:00.000Z";
    expect(ageSeconds(created, new Date("2026-11-12T00:01:30.900Z"))).toBe(90);
    expect(ageSeconds(created, new Date("2026-11-11T23:59:00.000Z"))).toBe(0);
  });
});

describe("scoping refusals (before anything is sent)", () => {
  it("refuses an empty label set and one without the instance label", async () => {
    await expect(nowhere.listByLabels({})).rejects.toMatchObject({ kind: "refused", message: expect.stringMatching(/unscoped/) });
    await expect(nowhere.listByLabels({ [LABEL_KEYS.company]: "co-1" })).rejects.toMatchObject({
      kind: "refused",
      message: expect.stringMatching(/runwarden\.instance/),
    });
  });

  it("refuses the same scopes page by page, at the first page asked for", async () => {
    const first = (labels: Record<string, string>) => nowhere.listPagesByLabels(labels).next();
    await expect(first({})).rejects.toMatchObject({ kind: "refused", message: expect.stringMatching(/unscoped/) });
    await expect(first({ [LABEL_KEYS.company]: "co-1" })).rejects.toMatchObject({ kind: "refused", message: expect.stringMatching(/runwarden\.instance/) });
    await expect(first(instanceScope("inst-b"))).rejects.toMatchObject({ kind: "refused", message: expect.stringMatching(/inst-b/) });
  });

  it("refuses another instance's labels on a provider bound to an instance", async () => {
    await expect(nowhere.listByLabels(instanceScope("inst-b"))).rejects.toMatchObject({ kind: "refused", message: expect.stringMatching(/inst-b/) });
    await expect(nowhere.create({ name: "rw-create-op-1", labels: buildLabels({ instanceId: "inst-b", companyId: "co-1" }) })).rejects.toMatchObject({
      kind: "refused",
    });
    await expect(nowhere.create({ name: "rw-create-op-1", labels: {} })).rejects.toMatchObject({ kind: "refused" });
  });

  it("has no provider-wide list or delete at all", () => {
    const methods = Object.getOwnPropertyNames(DaytonaProvider.prototype);
    expect(methods).not.toContain("list");
    expect(methods).not.toContain("listAll");
    expect(methods).not.toContain("deleteAll");
  });
});

describe("the pinned api-client", () => {
  it("still takes listSandboxes' parameters in the order the provider sends them", () => {
    const source = SandboxApi.prototype.listSandboxes.toString();
    const params = source
      .slice(source.indexOf("(") + 1, source.indexOf(")"))
      .split(",")
      .map((p) => p.trim().split("=")[0]?.trim());
    expect(params.slice(0, LIST_SANDBOXES_PARAMS.length)).toEqual([...LIST_SANDBOXES_PARAMS]);
    expect(params[LIST_SANDBOXES_PARAMS.length]).toBe("options");
  });
});
