import { describe, expect, test } from "vitest";
import { judgeLeaseBinding } from "./lease-binding";
import type { LeaseBindingEvidence } from "./schemas";
import { leaseBinding } from "../test/evidence";
import olderRelease from "./fixtures/lease-binding-staged-older-release.json";
import unknownProgram from "./fixtures/lease-binding-staged-unknown-program.json";

const CHECKS = ["same_run", "same_provider_lease", "same_remote_cwd", "not_replacement"];
const STAGED_CHECKS = [
  "staged_header_readable",
  "staged_source_run_matches",
  "staged_template_digest_matches",
  "staged_runner_identity_matches",
];
const ALL_STAGED = { headerReadable: true, sourceRunMatches: true, templateDigestMatches: true, runnerIdentityMatches: true };

const base = leaseBinding();
const withTarget = (t: Partial<LeaseBindingEvidence["target"]>, over: Partial<LeaseBindingEvidence> = {}) =>
  leaseBinding({ target: { ...base.target, ...t }, ...over });

describe("lease_binding (docs/rules.md §2.1, seed 000)", () => {
  test.each([
    { name: "created lease on the staged path (seed 000's bug)", e: withTarget({ acquisitionOutcome: "created" }, { staged: ALL_STAGED }) },
    { name: "resumed lease on the staged path", e: withTarget({ acquisitionOutcome: "resumed" }, { staged: ALL_STAGED }) },
    { name: "created lease on the remote-reattach path", e: withTarget({ acquisitionOutcome: "created" }, { path: "remote_reattach" }) },
    { name: "resumed lease on the remote-reattach path", e: withTarget({ acquisitionOutcome: "resumed" }, { path: "remote_reattach" }) },
  ])("admits: $name", ({ e }) => {
    const v = judgeLeaseBinding(e);
    expect(v).toMatchObject({ kind: "lease_binding", verdict: "admitted", code: null, reason: "lease_bound", continuation: null });
    expect(v.canRetry).toBe(false);
    expect(v.checks.every((c) => c.ok)).toBe(true);
    expect(v.checks.map((c) => c.name)).toEqual(e.staged ? [...CHECKS, ...STAGED_CHECKS] : CHECKS);
  });

  const refusals = [
    { name: "a replacement sandbox", e: withTarget({ acquisitionOutcome: "replacement" }), failed: "not_replacement", reason: "replacement_lease" },
    { name: "another provider lease", e: withTarget({ providerLeaseId: "sbx-2" }), failed: "same_provider_lease", reason: "provider_lease_mismatch" },
    { name: "another remote directory", e: withTarget({ remoteCwd: "/home/sandbox/other" }), failed: "same_remote_cwd", reason: "remote_cwd_mismatch" },
    { name: "a claim of another run", e: withTarget({ runId: "r2" }), failed: "same_run", reason: "run_mismatch" },
  ] as const;

  describe.each([
    { path: "staged_attachment", code: "native_runner_staged_attachment_recovery_unproven" },
    { path: "remote_reattach", code: "native_remote_recovery_lease_mismatch" },
  ] as const)("on the $path path", ({ path, code }) => {
    test.each(refusals)("refuses $name with $failed failing", ({ e, failed, reason }) => {
      const v = judgeLeaseBinding({ ...e, path });
      expect(v.verdict).toBe("refused");
      expect(v.code).toBe(code);
      expect(v.reason).toBe(reason);
      expect(v.checks.filter((c) => !c.ok).map((c) => c.name)).toEqual([failed]);
      expect(v).toMatchObject({ outcome: "terminal_failure", owner: "board", canRetry: true });
      expect(v.continuation).toMatchObject({ code: "native_continuation_requires_reconciliation", canRetry: true });
    });
  });

  test.each(STAGED_CHECKS.map((name, i) => ({ name, key: Object.keys(ALL_STAGED)[i] as keyof typeof ALL_STAGED })))(
    "a false $name refuses with the staged code",
    ({ name, key }) => {
      const v = judgeLeaseBinding(withTarget({}, { staged: { ...ALL_STAGED, [key]: false } }));
      expect(v.verdict).toBe("refused");
      expect(v.code).toBe("native_runner_staged_attachment_recovery_unproven");
      expect(v.checks.filter((c) => !c.ok).map((c) => c.name)).toEqual([name]);
    },
  );

  test.each([
    ["no staged evidence at all", null],
    ["the template digest missing", { headerReadable: true, sourceRunMatches: true, runnerIdentityMatches: true }],
  ] as const)("on the staged path, %s is a refusal, never a skipped check (§2.1)", (_name, staged) => {
    const v = judgeLeaseBinding(withTarget({}, { path: "staged_attachment", staged }));
    expect(v.verdict).toBe("refused");
    expect(v.code).toBe("native_runner_staged_attachment_recovery_unproven");
    expect(v.checks.map((c) => c.name)).toEqual([...CHECKS, ...STAGED_CHECKS]);
    expect(v.checks.find((c) => c.name === "staged_template_digest_matches")).toMatchObject({ ok: false, actual: "missing" });
  });

  test("on the remote-reattach path, staged checks that are absent are not evaluated", () => {
    const v = judgeLeaseBinding(withTarget({}, { path: "remote_reattach", staged: { headerReadable: true } }));
    expect(v.checks.map((c) => c.name)).toEqual([...CHECKS, "staged_header_readable"]);
    expect(v.verdict).toBe("admitted");
  });

  test("lists every check even after the first failure, with expected and actual", () => {
    const v = judgeLeaseBinding(
      withTarget({ runId: "r9", providerLeaseId: "sbx-9", remoteCwd: "/x", acquisitionOutcome: "replacement" }, { staged: { ...ALL_STAGED, headerReadable: false } }),
    );
    expect(v.checks).toEqual([
      { name: "same_run", ok: false, expected: "r9", actual: "r1" },
      { name: "same_provider_lease", ok: false, expected: "sbx-1", actual: "sbx-9" },
      { name: "same_remote_cwd", ok: false, expected: "/home/sandbox/work", actual: "/x" },
      { name: "not_replacement", ok: false, expected: "created or resumed", actual: "replacement" },
      { name: "staged_header_readable", ok: false, expected: true, actual: false },
      { name: "staged_source_run_matches", ok: true, expected: true, actual: true },
      { name: "staged_template_digest_matches", ok: true, expected: true, actual: true },
      { name: "staged_runner_identity_matches", ok: true, expected: true, actual: true },
    ]);
    expect(v.reason).toBe("run_mismatch");
  });
});

describe("the runner program on a staged sandbox: a released program this controller drives (§2.1, docs/runner.md Versions)", () => {
  const program = (p: { digest: string | null; protocol: number | null; min?: number; max?: number }) => ({
    headerReadable: true,
    sourceRunMatches: true,
    runnerIdentityMatches: true,
    runnerProgram: { digest: p.digest, protocol: p.protocol, speaks: { min: p.min ?? 1, max: p.max ?? 2 } },
  });
  const programCheck = (v: ReturnType<typeof judgeLeaseBinding>) => v.checks.find((c) => c.name === "staged_runner_program_supported");

  test("an older released program whose protocol this controller speaks is admitted (a deploy changed runnerd.mjs)", () => {
    const v = judgeLeaseBinding(withTarget({}, { staged: program({ digest: "aaaaaaaaaaaaaaaa", protocol: 1 }) }));
    expect(v.verdict).toBe("admitted");
    expect(programCheck(v)).toEqual({ name: "staged_runner_program_supported", ok: true, expected: "a released runner program speaking protocol 1–2", actual: "aaaaaaaaaaaaaaaa: protocol 1" });
    expect(v.checks.map((c) => c.name)).not.toContain("staged_template_digest_matches");
  });

  test.each([
    ["a program that is not released (unknown digest)", { digest: "bbbbbbbbbbbbbbbb", protocol: null }, "bbbbbbbbbbbbbbbb: not a released program"],
    ["a runner that does not say which program it runs", { digest: null, protocol: null }, "not reported"],
    ["a released program older than the window", { digest: "cccccccccccccccc", protocol: 1, min: 2, max: 3 }, "cccccccccccccccc: protocol 1"],
    ["a released program newer than this controller", { digest: "dddddddddddddddd", protocol: 3, min: 1, max: 2 }, "dddddddddddddddd: protocol 3"],
  ] as const)("%s is refused, and the run rests with Retry", (_name, p, actual) => {
    const v = judgeLeaseBinding(withTarget({}, { staged: program(p) }));
    expect(v).toMatchObject({ verdict: "refused", code: "native_runner_staged_attachment_recovery_unproven", reason: "staged_runner_program_unsupported" });
    expect(programCheck(v)).toMatchObject({ ok: false, actual });
  });

  test("a bundle with the older digest equality is judged as before (stored proofs keep their meaning)", () => {
    const v = judgeLeaseBinding(withTarget({}, { staged: { ...ALL_STAGED, templateDigestMatches: false } }));
    expect(v).toMatchObject({ verdict: "refused", reason: "staged_template_digest_mismatch" });
  });

  test("the docs' fixtures: an older release admitted, an unknown program refused", () => {
    expect(judgeLeaseBinding(olderRelease as LeaseBindingEvidence)).toMatchObject({ verdict: "admitted" });
    expect(judgeLeaseBinding(unknownProgram as LeaseBindingEvidence)).toMatchObject({ verdict: "refused", reason: "staged_runner_program_unsupported" });
  });
});

describe("a claim that names nothing (§2.1: never filled in from the target)", () => {
  test.each([
    { name: "no provider lease in the checkpoint", remote: { providerLeaseId: null, remoteCwd: base.claim.remote.remoteCwd }, reason: "provider_lease_mismatch" },
    { name: "no remote directory in the checkpoint", remote: { providerLeaseId: base.claim.remote.providerLeaseId, remoteCwd: null }, reason: "remote_cwd_mismatch" },
  ])("refuses: $name", ({ remote, reason }) => {
    const v = judgeLeaseBinding(leaseBinding({ claim: { ...base.claim, remote } }));
    expect(v).toMatchObject({ verdict: "refused", reason, continuation: { code: "native_continuation_requires_reconciliation" } });
  });
});

describe("the remote directory is the runner's own report (§2.1)", () => {
  test("a runner that reports no directory is refused: unknown proves nothing", () => {
    const v = judgeLeaseBinding(withTarget({ remoteCwd: null }));
    expect(v).toMatchObject({ verdict: "refused", reason: "remote_cwd_unknown" });
    expect(v.checks.find((c) => c.name === "same_remote_cwd")).toMatchObject({ ok: false, expected: base.claim.remote.remoteCwd, actual: "not reported" });
  });

  test("nothing recorded and nothing reported is not a match", () => {
    const v = judgeLeaseBinding(leaseBinding({ claim: { ...base.claim, remote: { ...base.claim.remote, remoteCwd: null } }, target: { ...base.target, remoteCwd: null } }));
    expect(v).toMatchObject({ verdict: "refused", reason: "remote_cwd_mismatch" });
  });
});
