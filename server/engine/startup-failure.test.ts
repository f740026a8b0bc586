import { describe, expect, test } from "vitest";
import type { StartupFailureEvidence } from "./schemas";
import { decide } from "./decide";
import { judgeStartupFailure } from "./startup-failure";
import { startupFailure } from "../test/evidence";

type PF = StartupFailureEvidence["providerFailure"];
const pf = (kind: NonNullable<PF>["kind"], category: string | null = null): PF => ({ kind, category, message: "x" });

const REJECTED = {
  verdict: "terminal_failure",
  code: "native_provider_startup_rejected",
  outcome: "terminal_failure",
  owner: "board",
  canRetry: true,
  nextAction: "The provider refused to start the session: fix the credentials, then Retry",
  retryAfterSeconds: null,
} as const;
const INTERRUPTED = {
  verdict: "retryable_failure",
  code: "native_session_interrupted",
  outcome: "retryable_failure",
  owner: "agent",
  canRetry: false,
  retryAfterSeconds: 30,
} as const;
const EXHAUSTED = {
  verdict: "terminal_failure",
  code: "native_session_retry_exhausted",
  outcome: "terminal_failure",
  owner: "board",
  canRetry: true,
  retryAfterSeconds: null,
} as const;

describe("startup_failure (docs/rules.md §2.3, seed 004)", () => {
  describe.each(["local", "remote"] as const)("definite requires_action on a %s target", (target) => {
    test.each(["authentication", "permission", "invalid_request"])("category %s → native_provider_startup_rejected", (category) => {
      const v = judgeStartupFailure(startupFailure({ target, providerFailure: pf("requires_action", category) }));
      expect(v).toMatchObject({ ...REJECTED, reason: "provider_rejected" });
      expect(v.checks.map((c) => c.name)).toEqual(["provider_rejected_request"]);
    });
  });

  test.each(["requires_action", "transient", "rate_limit", "quota", "model", "unknown"] as const)(
    "remote, definite, provider failure %s → native_provider_startup_rejected by the remote rule",
    (kind) => {
      const v = judgeStartupFailure(startupFailure({ target: "remote", providerFailure: pf(kind, kind === "requires_action" ? "billing" : null) }));
      expect(v).toMatchObject({ ...REJECTED, reason: "remote_startup_rejected" });
      expect(v.checks.map((c) => [c.name, c.ok])).toEqual([
        ["provider_rejected_request", false],
        ["remote_definite_provider_failure", true],
      ]);
    },
  );

  test.each<{ name: string; e: Partial<StartupFailureEvidence> }>([
    { name: "local unknown", e: { target: "local", providerFailure: pf("unknown") } },
    { name: "local transient", e: { target: "local", providerFailure: pf("transient") } },
    { name: "local rate limit", e: { target: "local", providerFailure: pf("rate_limit") } },
    { name: "local quota", e: { target: "local", providerFailure: pf("quota") } },
    { name: "local model", e: { target: "local", providerFailure: pf("model") } },
    { name: "local requires_action of another category", e: { target: "local", providerFailure: pf("requires_action", "billing") } },
    { name: "local requires_action without category", e: { target: "local", providerFailure: pf("requires_action") } },
    { name: "local, no provider failure", e: { target: "local", providerFailure: null } },
    { name: "local, non-definite requires_action/permission", e: { target: "local", definite: false } },
    { name: "remote, non-definite requires_action/permission", e: { target: "remote", definite: false } },
    { name: "remote, non-definite transient", e: { target: "remote", definite: false, providerFailure: pf("transient") } },
    { name: "remote, definite, no provider failure", e: { target: "remote", providerFailure: null } },
  ])("$name → retryable native_session_interrupted, retried after 30 s", ({ e }) => {
    const v = judgeStartupFailure(startupFailure({ attempt: 1, ...e }));
    expect(v).toMatchObject({ ...INTERRUPTED, reason: "session_interrupted" });
    expect(v.checks.map((c) => c.name)).toEqual(["provider_rejected_request", "remote_definite_provider_failure", "attempts_left", "runner_ingress_free"]);
    // A startup failure never becomes an ownership hold.
    expect(v.code).not.toBe("ambiguous_remote_recovery_evidence");
  });

  test("local transient: attempts 1 and 2 retry, attempt 3 exhausts the budget", () => {
    const at = (attempt: number) => judgeStartupFailure(startupFailure({ target: "local", providerFailure: pf("transient"), attempt }));
    expect(at(1)).toMatchObject(INTERRUPTED);
    expect(at(2)).toMatchObject(INTERRUPTED);
    expect(at(3)).toMatchObject({ ...EXHAUSTED, reason: "retries_exhausted" });
    expect(at(3).checks.at(-1)).toEqual({ name: "attempts_left", ok: false, expected: "attempt below 3", actual: 3 });
    expect(at(4)).toMatchObject(EXHAUSTED);
  });

  test("the rejection rules are tried before the budget", () => {
    expect(judgeStartupFailure(startupFailure({ attempt: 3 }))).toMatchObject(REJECTED);
  });

  test("maxAttempts comes from the bundle", () => {
    const e = startupFailure({ target: "local", providerFailure: pf("transient"), attempt: 4, maxAttempts: 5 });
    expect(judgeStartupFailure(e)).toMatchObject(INTERRUPTED);
  });

  test("the retry delay is configuration", () => {
    const e = startupFailure({ target: "local", providerFailure: pf("transient") });
    expect(judgeStartupFailure(e, { retryAfterSeconds: 5 }).retryAfterSeconds).toBe(5);
  });

  test("a runner ingress bind conflict is retried under its own code, owner and Retry from the catalogue (item 10)", () => {
    const v = judgeStartupFailure(startupFailure({ target: "remote", definite: false, providerFailure: null, attempt: 1, bindConflict: true }));
    expect(v).toMatchObject({ verdict: "retryable_failure", code: "runner_ingress_bind_conflict", reason: "ingress_bind_conflict", owner: "agent", canRetry: false, retryAfterSeconds: 30 });
    expect(v.checks.at(-1)).toMatchObject({ name: "runner_ingress_free", ok: false });
    // The budget still bounds it.
    const last = judgeStartupFailure(startupFailure({ target: "remote", definite: false, providerFailure: null, attempt: 3, bindConflict: true }));
    expect(last).toMatchObject(EXHAUSTED);
  });

  test("bindConflict defaults to false", () => {
    const { bindConflict: _omit, ...bundle } = startupFailure({ target: "local", providerFailure: null, attempt: 1 });
    expect(decide(bundle)).toMatchObject({ code: "native_session_interrupted" });
  });

  test("a sandbox without node (exit 127) ends at once with runner_node_missing, naming the snapshot; no Retry in the same snapshot", () => {
    const v = judgeStartupFailure({ kind: "startup_failure", target: "remote", phase: "session.open", definite: false, providerFailure: null, attempt: 1, maxAttempts: 3, bindConflict: false, runnerMissing: { program: "node", snapshot: "ubuntu:22.04" } });
    expect(v).toMatchObject({ verdict: "terminal_failure", code: "runner_node_missing", reason: "runner_node_missing", owner: "board", canRetry: false, retryAfterSeconds: null });
    expect(v.checks.at(-1)).toEqual({ name: "runner_can_run", ok: false, expected: "node on the sandbox's PATH", actual: "no node in snapshot ubuntu:22.04" });
  });
});
