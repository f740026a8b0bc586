import { describe, expect, test } from "vitest";
import { judgeCreationIntent } from "./creation-intent";
import type { CreationIntentEvidence } from "./schemas";
import { creationIntent, identity, MIN, observer, plus, T0 } from "../test/evidence";

const due = { now: plus(T0, 31 * MIN) };
const LIVE = { readable: true, pidLive: true, liveStartedAt: plus(T0, -5 * MIN) };
const found = (name: string, labels: Record<string, string | null>) => ({ inspection: { found: true as const, sandbox: { name, labels } } });
const GOOD_LABELS = { instance: "inst-a", company: "co-1", operation: "op-1" };

describe("creation_intent (docs/rules.md §2.5, order of docs/evidence.md)", () => {
  test("(1) a committed lease → commit, before anything else", () => {
    const v = judgeCreationIntent(creationIntent({ committedLease: true, creatorProbe: LIVE, inspection: null }));
    expect(v).toMatchObject({ verdict: "commit", reason: "lease_committed", code: null, creatorVerdict: null });
    expect(v.checks).toEqual([{ name: "no_committed_lease", ok: false, expected: false, actual: true }]);
  });

  test.each<{ name: string; e: CreationIntentEvidence; creator: { verdict: string; reason: string } }>([
    { name: "creator alive", e: creationIntent({ creatorProbe: LIVE }), creator: { verdict: "alive", reason: "same_process" } },
    { name: "creator is this controller", e: creationIntent({ intent: { creator: observer() } }), creator: { verdict: "alive", reason: "self" } },
    { name: "creator on another host", e: creationIntent({ intent: { creator: identity({ pidSpace: "ps-other" }) } }), creator: { verdict: "unknown", reason: "foreign_pid_space" } },
    { name: "creator not recorded (intent from before identities)", e: creationIntent({ intent: { creator: null } }), creator: { verdict: "unknown", reason: "unidentified" } },
    { name: "creator recorded without pid", e: creationIntent({ intent: { creator: { bootId: "b-1", startedAt: T0, pidSpace: "ps-9f3a" } } }), creator: { verdict: "unknown", reason: "unidentified" } },
    { name: "process table unreadable", e: creationIntent({ creatorProbe: { readable: false, pidLive: false, liveStartedAt: null } }), creator: { verdict: "unknown", reason: "unreadable" } },
    { name: "creator not probed", e: creationIntent({ creatorProbe: null }), creator: { verdict: "unknown", reason: "unreadable" } },
    { name: "live pid, start time unreadable", e: creationIntent({ creatorProbe: { readable: true, pidLive: true, liveStartedAt: null } }), creator: { verdict: "unknown", reason: "unreadable" } },
  ])("(2) not due and $name → wait", ({ e, creator }) => {
    const v = judgeCreationIntent(e);
    expect(v).toMatchObject({ verdict: "wait", reason: "not_due", creatorVerdict: creator });
    expect(v.checks.map((c) => [c.name, c.ok])).toEqual([
      ["no_committed_lease", true],
      ["next_attempt_reached", false],
      ["creator_exited", false],
    ]);
    expect(v.checks.at(-1)?.actual).toBe(`${creator.verdict} (${creator.reason})`);
  });

  test.each([
    { name: "pid gone", probe: { readable: true, pidLive: false, liveStartedAt: null }, reason: "pid_gone" },
    { name: "pid recycled", probe: { readable: true, pidLive: true, liveStartedAt: plus(T0, 2 * MIN) }, reason: "pid_recycled" },
  ])("(2) a creator proven exited ($name) makes the intent due now", ({ probe, reason }) => {
    const v = judgeCreationIntent(creationIntent({ creatorProbe: probe }));
    expect(v).toMatchObject({ verdict: "reclaim", creatorVerdict: { verdict: "exited", reason } });
  });

  test.each([
    { name: "exactly at nextAttemptAt", now: plus(T0, 30 * MIN) },
    { name: "after nextAttemptAt", now: plus(T0, 31 * MIN) },
  ])("(2) due by time ($name) even with a live creator; the creator is not judged", ({ now }) => {
    const v = judgeCreationIntent(creationIntent({ now, creatorProbe: LIVE }));
    expect(v.verdict).toBe("reclaim");
    expect(v.creatorVerdict).toBeNull();
    expect(v.checks.map((c) => c.name)).not.toContain("creator_exited");
  });

  test("(3) due, no inspection yet → inspect", () => {
    const v = judgeCreationIntent(creationIntent({ ...due, inspection: null }));
    expect(v).toMatchObject({ verdict: "inspect", reason: "not_inspected" });
    expect(v.checks.map((c) => c.name)).toEqual(["no_committed_lease", "next_attempt_reached", "inspected"]);
  });

  test("(4) found with the exact name and all three labels → reclaim", () => {
    const v = judgeCreationIntent(creationIntent(due));
    expect(v).toMatchObject({ verdict: "reclaim", reason: "labels_match" });
    expect(v.checks.map((c) => c.name)).toEqual([
      "no_committed_lease",
      "next_attempt_reached",
      "inspected",
      "sandbox_found",
      "creation_name_matches",
      "instance_label_matches",
      "company_label_matches",
      "operation_label_matches",
    ]);
    expect(v.checks.every((c) => c.ok)).toBe(true);
  });

  test.each([
    { name: "another creation name", e: found("rw-create-op-2", GOOD_LABELS), failing: "creation_name_matches", reason: "name_mismatch" },
    { name: "another instance", e: found("rw-create-op-1", { ...GOOD_LABELS, instance: "inst-b" }), failing: "instance_label_matches", reason: "labels_mismatch" },
    { name: "another company", e: found("rw-create-op-1", { ...GOOD_LABELS, company: "co-2" }), failing: "company_label_matches", reason: "labels_mismatch" },
    { name: "another operation", e: found("rw-create-op-1", { ...GOOD_LABELS, operation: "op-2" }), failing: "operation_label_matches", reason: "labels_mismatch" },
    { name: "no instance label", e: found("rw-create-op-1", { company: "co-1", operation: "op-1" }), failing: "instance_label_matches", reason: "labels_mismatch" },
    { name: "a null operation label", e: found("rw-create-op-1", { ...GOOD_LABELS, operation: null }), failing: "operation_label_matches", reason: "labels_mismatch" },
  ])("(5) found with $name → manual_reconciliation, nothing destroyed", ({ e, failing, reason }) => {
    const v = judgeCreationIntent(creationIntent({ ...due, ...e }));
    expect(v).toMatchObject({ verdict: "manual_reconciliation", reason });
    expect(v.checks.filter((c) => !c.ok).map((c) => c.name)).toEqual([failing]);
  });

  test("(6) not found before settleDeadline → stay_pending (the provider may still materialise it)", () => {
    const v = judgeCreationIntent(creationIntent({ now: plus(T0, 3 * MIN), creatorProbe: { readable: true, pidLive: false, liveStartedAt: null }, inspection: { found: false } }));
    expect(v).toMatchObject({ verdict: "stay_pending", reason: "not_found_before_settle_deadline" });
    expect(v.checks.at(-1)).toEqual({ name: "settle_deadline_passed", ok: false, expected: `at or after ${plus(T0, 5 * MIN)}`, actual: plus(T0, 3 * MIN) });
  });

  test.each([
    { name: "exactly at settleDeadline", now: plus(T0, 5 * MIN) },
    { name: "after settleDeadline", now: plus(T0, 10 * MIN) },
  ])("(7) not found $name → resolve_absent", ({ now }) => {
    const v = judgeCreationIntent(creationIntent({ now, inspection: { found: false } }));
    expect(v).toMatchObject({ verdict: "resolve_absent", reason: "not_found_after_settle_deadline" });
  });

  test("a late materialisation: stays pending first, a later sweep finds and reclaims it", () => {
    const first = judgeCreationIntent(creationIntent({ now: plus(T0, 2 * MIN), inspection: { found: false } }));
    const later = judgeCreationIntent(creationIntent({ now: plus(T0, 4 * MIN) }));
    expect([first.verdict, later.verdict]).toEqual(["stay_pending", "reclaim"]);
  });
});
