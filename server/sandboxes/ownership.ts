import { asIdentity, judgeSandboxOwnership } from "../engine";
import { normaliseLabels } from "../providers/labels";
import type { SandboxView } from "../providers/types";
import type { Observer } from "../services/observer";
import type { OwnershipVerdict } from "../shared/confirm";
import { orphanSince, type ORPHAN_SINCE_RULES } from "./cost";
import { describeOwnership, ownershipEvidence, ownershipRecordsOf } from "./evidence";
import { LIVE, type SandboxRecords } from "./records";

/**
 * Orphaned sandboxes (docs/rules.md §5 R4): this instance's sandboxes — listed by its instance
 * label only, never provider-wide — that no active lease of a live run holds. Each gets an
 * ownership verdict, decided from Runwarden's own records and the sandbox's labels:
 *
 * - `foreign`: its labels do not match the intent or lease that names it (the
 *   `sandbox_ownership` proof refuses), only another instance's records name it, or its
 *   company label names a company this instance has no runs, intents or leases for;
 * - `unrecorded`: this instance's labels, but no intent or lease of this instance names
 *   it — labels alone prove nothing (another installation may share the organization), so
 *   it is never in a batch reclaim; an operator may destroy it one at a time by its name;
 * - `live_creator`: a pending creation intent names it and its creator is alive, or cannot
 *   be judged from here and the intent's wait has not run out;
 * - `unknown`: no company label, a live run that names it without a lease on it, or a lease
 *   kept on purpose (`retained`) — nothing proves it may go;
 * - `reclaimable`: otherwise — the ownership proof holds (a record of this instance names
 *   it and its labels match), and no live creator or live run holds it.
 */

export type Judgement =
  | { held: true; reason: string }
  | {
      held: false;
      verdict: OwnershipVerdict;
      reason: string;
      orphanSince: Date;
      orphanSinceRule: (typeof ORPHAN_SINCE_RULES)[number];
    };

export const fmt = (d: Date) => d.toISOString();

/** The ownership verdict of one sandbox of this instance, from its records (no I/O but the pid probe). */
export function judgeSandbox(observer: Observer, instanceId: string, sandbox: SandboxView, records: SandboxRecords, now: Date): Judgement {
  const { intent, leases, run } = records;
  const holder = leases.find((l) => l.status === "active" && l.run && LIVE.has(l.run.status));
  if (holder) return { held: true, reason: `held by lease ${holder.id} of run ${holder.run!.id} (${holder.run!.status})` };

  const since = orphanSince(sandbox, records);
  const verdict = (v: OwnershipVerdict, reason: string): Judgement => ({ held: false, verdict: v, reason, ...since });
  const labels = normaliseLabels(sandbox.labels);

  if (labels.instance !== instanceId) return verdict("foreign", `its instance label is ${labels.instance ?? "missing"}, not ${instanceId}`);
  if (!labels.company) return verdict("unknown", "it carries no company label, so nothing proves whose it is");
  // The ownership proof (§2.9): a record of this instance names exactly it, labels match.
  const named = ownershipRecordsOf(intent, leases);
  const ownership = judgeSandboxOwnership(ownershipEvidence(instanceId, sandbox, named));
  if (ownership.verdict === "refused") return verdict("foreign", `its labels do not match the records that name it: ${describeOwnership(ownership)}`);
  if (ownership.verdict === "unrecorded") {
    const otherInstance = named.find((r) => r.instanceId !== instanceId);
    if (otherInstance) return verdict("foreign", `${otherInstance.type} ${otherInstance.id} of instance ${otherInstance.instanceId} names it, and no record of ${instanceId} does`);
    if (!records.companyKnown) return verdict("foreign", `company ${labels.company} has no runs, intents or leases on instance ${instanceId}`);
    // A live run's sandbox always has an intent (written before the create): nothing proves it may go.
    if (run && LIVE.has(run.status)) return verdict("unknown", `run ${run.id} is still ${run.status}; no intent or lease of this instance names the sandbox`);
    return verdict("unrecorded", `its labels name this instance and company ${labels.company}, but no creation intent or lease of this instance names it: it can only be destroyed one at a time, by typing its name`);
  }
  if (intent?.status === "pending") {
    const creator = observer.judgeExit(asIdentity(intent.creator));
    if (creator.verdict === "alive") {
      return verdict("live_creator", `creation intent ${intent.id} is pending and its creator is alive (${creator.reason})`);
    }
    if (creator.verdict === "unknown" && now < intent.nextAttemptAt) {
      return verdict("live_creator", `creation intent ${intent.id} is pending; its creator cannot be judged from here (${creator.reason}) and may still be waiting until ${fmt(intent.nextAttemptAt)}`);
    }
  }
  if (run && LIVE.has(run.status)) return verdict("unknown", `run ${run.id} is still ${run.status} but holds no active lease on it`);
  if (leases.some((l) => l.status === "retained")) return verdict("unknown", "a lease on it is retained (kept on purpose)");

  const why = [`${ownership.namedBy.join(" and ")} of this instance name${ownership.namedBy.length === 1 ? "s" : ""} it and its labels match`];
  if (run) why.push(`run ${run.id} is ${run.status}`);
  if (intent) why.push(`creation intent ${intent.id} is ${intent.status}${intent.status === "pending" ? " and its creator exited or its wait ran out" : ""}`);
  const inFlight = leases.find((l) => l.status === "pending_cleanup" && l.fencedUntil && l.fencedUntil > now);
  if (inFlight) why.push(`a teardown is in flight (lease ${inFlight.id}, fenced until ${fmt(inFlight.fencedUntil!)})`);
  return verdict("reclaimable", why.join("; "));
}
