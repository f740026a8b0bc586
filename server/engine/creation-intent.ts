import { at, check } from "./checks";
import { judgement, judgeRecordedProcess } from "./process-exit";
import type { CreationIntentEvidence } from "./schemas";
import type { Check, CreationIntentResult, ProcessJudgement } from "./verdicts";

function describeJudgement(j: ProcessJudgement): string {
  return `${j.verdict} (${j.reason})`;
}

/**
 * What a recovery sweep does with one pending sandbox-creation intent (docs/rules.md §2.5, in
 * the order of docs/evidence.md). Only a creator proven `exited` makes an intent due early.
 */
export function judgeCreationIntent(e: CreationIntentEvidence): CreationIntentResult {
  const { intent } = e;
  const checks: Check[] = [];
  let creatorVerdict: ProcessJudgement | null = null;
  const done = (verdict: CreationIntentResult["verdict"], reason: string): CreationIntentResult => ({
    kind: "creation_intent",
    verdict,
    code: null,
    reason,
    checks,
    creatorVerdict,
  });

  // 1. The lease was committed after all: the intent is settled.
  checks.push(check("no_committed_lease", !e.committedLease, false, e.committedLease));
  if (e.committedLease) return done("commit", "lease_committed");

  // 2. Due when nextAttemptAt has come, or earlier when the creator has exited.
  const reached = at(e.now) >= at(intent.nextAttemptAt);
  checks.push(check("next_attempt_reached", reached, `at or after ${intent.nextAttemptAt}`, e.now));
  if (!reached) {
    creatorVerdict = judgement(judgeRecordedProcess(intent.creator, e.observer, e.creatorProbe));
    const exited = creatorVerdict.verdict === "exited";
    checks.push(check("creator_exited", exited, "exited", describeJudgement(creatorVerdict)));
    // A live, foreign, unidentified or unreadable creator may still be waiting on the provider.
    if (!exited) return done("wait", "not_due");
  }

  // 3. Ask the provider first.
  const inspection = e.inspection ?? null;
  checks.push(check("inspected", inspection !== null, true, inspection !== null));
  if (inspection === null) return done("inspect", "not_inspected");

  checks.push(check("sandbox_found", inspection.found, true, inspection.found));
  if (inspection.found) {
    // 4./5. Destroy only what is provably ours: exact name and all three labels.
    const { name, labels } = inspection.sandbox;
    const matches = [
      check("creation_name_matches", name === intent.creationName, intent.creationName, name),
      check("instance_label_matches", labels.instance === intent.instanceId, intent.instanceId, labels.instance ?? null),
      check("company_label_matches", labels.company === intent.companyId, intent.companyId, labels.company ?? null),
      check("operation_label_matches", labels.operation === intent.id, intent.id, labels.operation ?? null),
    ];
    checks.push(...matches);
    const first = matches.find((c) => !c.ok);
    if (!first) return done("reclaim", "labels_match");
    return done("manual_reconciliation", first.name === "creation_name_matches" ? "name_mismatch" : "labels_mismatch");
  }

  // 6./7. The provider can still materialise an aborted request until the settle deadline.
  const settled = at(e.now) >= at(intent.settleDeadline);
  checks.push(check("settle_deadline_passed", settled, `at or after ${intent.settleDeadline}`, e.now));
  if (!settled) return done("stay_pending", "not_found_before_settle_deadline");
  return done("resolve_absent", "not_found_after_settle_deadline");
}
