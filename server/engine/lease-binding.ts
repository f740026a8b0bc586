import { failureEntry, failureFields, type FailureCode } from "./catalogue";
import { assertNever, check } from "./checks";
import type { LeaseBindingEvidence } from "./schemas";
import type { Check, LeaseBindingResult } from "./verdicts";

const STAGED_CHECKS = [
  { key: "headerReadable", name: "staged_header_readable", reason: "staged_header_unreadable" },
  { key: "sourceRunMatches", name: "staged_source_run_matches", reason: "staged_source_run_mismatch" },
  { key: "templateDigestMatches", name: "staged_template_digest_matches", reason: "staged_template_digest_mismatch" },
  { key: "runnerIdentityMatches", name: "staged_runner_identity_matches", reason: "staged_runner_identity_mismatch" },
] as const;

function refusalCode(path: LeaseBindingEvidence["path"]): FailureCode {
  switch (path) {
    case "staged_attachment":
      return "native_runner_staged_attachment_recovery_unproven";
    case "remote_reattach":
      return "native_remote_recovery_lease_mismatch";
    default:
      return assertNever(path);
  }
}

type RunnerProgram = NonNullable<NonNullable<LeaseBindingEvidence["staged"]>["runnerProgram"]>;

/**
 * The runner program on the sandbox is a released one (runner/releases.json) whose protocol this
 * controller drives (docs/rules.md §2.1, docs/runner.md "Versions"): a runner changed by a
 * deploy is still driven; an unknown program, or one outside the window, proves nothing.
 */
function programCheck(p: RunnerProgram): Check {
  const expected = `a released runner program speaking protocol ${p.speaks.min === p.speaks.max ? p.speaks.min : `${p.speaks.min}–${p.speaks.max}`}`;
  const actual = p.digest === null ? "not reported" : p.protocol === null ? `${p.digest}: not a released program` : `${p.digest}: protocol ${p.protocol}`;
  const ok = p.digest !== null && p.protocol !== null && p.protocol >= p.speaks.min && p.protocol <= p.speaks.max;
  return check("staged_runner_program_supported", ok, expected, actual);
}

/**
 * May a restarted controller reattach (or verify a staged attachment's restart) on the
 * lease the claim names? docs/rules.md §2.1. Every check is evaluated and listed, even after
 * the first failure, so an operator sees all that is wrong at once.
 */
export function judgeLeaseBinding(e: LeaseBindingEvidence): LeaseBindingResult {
  const { claim, target } = e;
  const evaluated: { check: Check; reason: string }[] = [
    { check: check("same_run", claim.runId === target.runId, target.runId, claim.runId), reason: "run_mismatch" },
    {
      check: check(
        "same_provider_lease",
        target.providerLeaseId === claim.remote.providerLeaseId,
        claim.remote.providerLeaseId,
        target.providerLeaseId,
      ),
      reason: "provider_lease_mismatch",
    },
    // The checkpoint's directory (what the runner reported at its start and session.open)
    // against what the target's runner reports now: unknown on either side proves nothing.
    {
      check: check(
        "same_remote_cwd",
        target.remoteCwd !== null && claim.remote.remoteCwd !== null && target.remoteCwd === claim.remote.remoteCwd,
        claim.remote.remoteCwd,
        target.remoteCwd ?? "not reported",
      ),
      reason: claim.remote.remoteCwd !== null && target.remoteCwd === null ? "remote_cwd_unknown" : "remote_cwd_mismatch",
    },
    // `created` and `resumed` are both admitted: a per-turn follow-up always gets `created` (seed 000).
    {
      check: check(
        "not_replacement",
        target.acquisitionOutcome !== "replacement",
        "created or resumed",
        target.acquisitionOutcome,
      ),
      reason: "replacement_lease",
    },
  ];
  const staged = e.staged ?? {};
  const program = staged.runnerProgram;
  for (const s of STAGED_CHECKS) {
    // A program judged against the released programs stands for the older digest equality.
    if (s.key === "templateDigestMatches" && program && staged.templateDigestMatches === undefined) {
      evaluated.push({ check: programCheck(program), reason: "staged_runner_program_unsupported" });
      continue;
    }
    const value = staged[s.key];
    if (value === undefined) {
      // On the staged path every staged check is required: missing evidence is a refusal,
      // never a skipped check (§2.1, seed 000 "all still proven").
      if (e.path === "staged_attachment") evaluated.push({ check: check(s.name, false, true, "missing"), reason: s.reason });
      continue;
    }
    evaluated.push({ check: check(s.name, value, true, value), reason: s.reason });
  }

  const checks = evaluated.map((x) => x.check);
  const firstFailure = evaluated.find((x) => !x.check.ok);
  if (!firstFailure) {
    return {
      kind: "lease_binding",
      verdict: "admitted",
      code: null,
      reason: "lease_bound",
      checks,
      ...failureFields(null),
      continuation: null,
    };
  }
  const code = refusalCode(e.path);
  const rest = failureEntry("native_continuation_requires_reconciliation");
  return {
    kind: "lease_binding",
    verdict: "refused",
    code,
    reason: firstFailure.reason,
    checks,
    ...failureFields(code),
    continuation: {
      code: rest.code,
      outcome: rest.outcome,
      owner: rest.owner,
      canRetry: rest.canRetry,
      message: rest.message,
      nextAction: rest.nextAction,
    },
  };
}
