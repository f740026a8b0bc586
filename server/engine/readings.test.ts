import { describe, expect, it } from "vitest";
import { judgeProcessExit } from "./process-exit";
import { readChecks } from "./readings";
import { judgeCreationIntent } from "./creation-intent";
import { judgeLeaseBinding } from "./lease-binding";
import { parseEvidence } from "./decide";
import creationExited from "./fixtures/creation-intent-creator-exited.json";
import leaseReplacement from "./fixtures/lease-binding-replacement.json";
import pidRecycled from "./fixtures/process-exit-pid-recycled.json";

const FIXTURES: Record<string, unknown> = {
  "process-exit-pid-recycled.json": pidRecycled,
  "lease-binding-replacement.json": leaseReplacement,
  "creation-intent-creator-exited.json": creationExited,
};
const fixture = (name: string) => FIXTURES[name] as Record<string, unknown>;

describe("readChecks", () => {
  it("reads process_exit's pid_live answered no as the question that proved the exit, not as a failure", () => {
    const base = fixture("process-exit-pid-recycled.json");
    const evidence = { ...base, probe: { readable: true, pidLive: false } };
    const parsed = parseEvidence(evidence);
    if (!parsed.ok || parsed.evidence.kind !== "process_exit") throw new Error("fixture does not parse");
    const v = judgeProcessExit(parsed.evidence);
    expect(v.verdict).toBe("exited");
    const readings = readChecks(v, v.checks);
    const pidLive = v.checks.findIndex((c) => c.name === "pid_live");
    expect(v.checks[pidLive]!.ok).toBe(false);
    expect(readings[pidLive]).toEqual({ kind: "decided", verdict: "exited", reason: "pid_gone" });
    expect(readings.slice(0, pidLive).every((r) => r.kind === "went_on")).toBe(true);
    expect(readings.some((r) => r.kind === "refused")).toBe(false);
  });

  it("reads a gate's unmet condition as a refusal and its met ones as held", () => {
    const parsed = parseEvidence(fixture("lease-binding-replacement.json"));
    if (!parsed.ok || parsed.evidence.kind !== "lease_binding") throw new Error("fixture does not parse");
    const v = judgeLeaseBinding(parsed.evidence);
    expect(v.verdict).toBe("refused");
    const readings = readChecks(v, v.checks);
    v.checks.forEach((c, i) => expect(readings[i]!.kind).toBe(c.ok ? "held" : "refused"));
    expect(readings.some((r) => r.kind === "refused")).toBe(true);
  });

  it("names the first mismatched label, not the last check, as what sent an intent to manual reconciliation", () => {
    const parsed = parseEvidence(fixture("creation-intent-creator-exited.json"));
    if (!parsed.ok || parsed.evidence.kind !== "creation_intent") throw new Error("fixture does not parse");
    const e = parsed.evidence;
    const intentId = e.intent.id;
    const v = judgeCreationIntent({
      ...e,
      inspection: { found: true, sandbox: { name: e.intent.creationName, labels: { instance: e.intent.instanceId, company: "someone-else", operation: intentId } } },
    } as typeof e);
    expect(v.verdict).toBe("manual_reconciliation");
    const readings = readChecks(v, v.checks);
    const company = v.checks.findIndex((c) => c.name === "company_label_matches");
    expect(readings[company]!.kind).toBe("decided");
    expect(readings[v.checks.length - 1]!.kind).toBe("went_on");
  });
});
