import { describe, expect, it } from "vitest";
import { applicableRules, faultAppliesAt, faultRuleInputSchema, matchesSubject, subjectOf, type FaultRule } from "./faults";

const rule = (over: Partial<FaultRule>): FaultRule => ({
  id: "f",
  match: {},
  fault: { kind: "latency", ms: 10 },
  times: null,
  used: 0,
  createdAt: "2026-11-12T00:00:00.000Z",
  ...over,
});

describe("fault rules", () => {
  it("fills defaults for a bare kind", () => {
    expect(faultRuleInputSchema.parse({ fault: "reject" })).toEqual({
      match: {},
      fault: { kind: "reject", providerFailure: { kind: "requires_action", category: "permission", message: "bwrap: loopback: Failed RTM_NEWADDR" } },
      times: null,
    });
    expect(faultRuleInputSchema.parse({ fault: "late", times: 2 }).fault).toEqual({ kind: "late", delayMs: 3000 });
    expect(faultRuleInputSchema.safeParse({ fault: { kind: "reject", providerFailure: { kind: "nope", category: null, message: "" } } }).success).toBe(false);
    expect(faultRuleInputSchema.safeParse({ fault: "latency", times: 0 }).success).toBe(false);
  });

  it("matches on every given criterion: name, run id (label, state or request) and labels", () => {
    const subject = subjectOf("rw-create-op-1", { "runwarden.instance": "inst-a", "runwarden.run": "r1" }, "r-state", undefined);
    expect(subject.runIds).toEqual(["r1", "r-state"]);
    expect(matchesSubject({}, subject)).toBe(true);
    expect(matchesSubject({ name: "rw-create-op-1" }, subject)).toBe(true);
    expect(matchesSubject({ name: "rw-create-op-2" }, subject)).toBe(false);
    expect(matchesSubject({ runId: "r-state" }, subject)).toBe(true);
    expect(matchesSubject({ runId: "r9" }, subject)).toBe(false);
    expect(matchesSubject({ labels: { "runwarden.instance": "inst-a" } }, subject)).toBe(true);
    expect(matchesSubject({ name: "rw-create-op-1", labels: { "runwarden.instance": "inst-b" } }, subject)).toBe(false);
  });

  it("applies each fault kind only where it means something, and only while uses remain", () => {
    expect(faultAppliesAt("late", "create")).toBe(true);
    expect(faultAppliesAt("late", "sandbox")).toBe(false);
    expect(faultAppliesAt("never_connect", "session_open")).toBe(true);
    expect(faultAppliesAt("bind_conflict", "runner_start")).toBe(true);
    expect(faultAppliesAt("bind_conflict", "session_open")).toBe(false);
    expect(faultAppliesAt("latency", "list")).toBe(true);
    const s = subjectOf("n", {});
    const rules = [rule({ id: "a", times: 1, used: 1 }), rule({ id: "b", times: 2, used: 1 }), rule({ id: "c", fault: { kind: "never_connect" } })];
    expect(applicableRules(rules, "sandbox", s, "latency").map((r) => r.id)).toEqual(["b"]);
    expect(applicableRules(rules, "session_open", s, "never_connect").map((r) => r.id)).toEqual(["c"]);
    expect(applicableRules(rules, "create", s, "never_connect")).toEqual([]);
  });
});
