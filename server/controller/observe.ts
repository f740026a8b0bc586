import { asIdentity, judgeProcessExit, type CreationIntentEvidence, type Identity, type PartialIdentity, type Probe, type Verdict } from "../engine";
import type { SandboxCreationIntent } from "../db/client";
import { probePid } from "../process/identity";
import type { ControllerContext } from "./context";
import { evidenceIdentity } from "./context";

/**
 * The probe that goes with a recorded identity. A pid is only probed on this host when
 * the record is from this PID space; otherwise the probe says nothing (unreadable) and
 * the engine answers `foreign_pid_space` anyway.
 */
export function probeFor(ctx: ControllerContext, record: PartialIdentity | null | undefined): Probe {
  if (!record?.pid || !record.pidSpace || record.pidSpace !== ctx.identity.pidSpace) {
    return { readable: false, pidLive: false, liveStartedAt: null, liveStartTicks: null };
  }
  return probePid(record.pid);
}

export interface ExitJudgement {
  evidence: { kind: "process_exit"; record: PartialIdentity | null; observer: Identity; probe: Probe };
  verdict: Verdict;
}

export function judgeExit(ctx: ControllerContext, record: PartialIdentity | null): ExitJudgement {
  const evidence = { kind: "process_exit" as const, record, observer: evidenceIdentity(ctx.identity), probe: probeFor(ctx, record) };
  return { evidence, verdict: judgeProcessExit(evidence) };
}

/**
 * One probe per distinct creator across a page of intents (docs/decisions/0003-cost-at-scale.md): every row of a page
 * usually names the same live controller. Only for reading a page: rows the engine would act
 * on are probed again, fresh, under their lock.
 */
export function pageProbes(ctx: ControllerContext): (record: PartialIdentity | null) => Probe {
  const seen = new Map<string, Probe>();
  return (record) => {
    const key = `${record?.pidSpace ?? ""}\u0000${record?.pid ?? ""}`;
    let probe = seen.get(key);
    if (!probe) {
      probe = probeFor(ctx, record);
      seen.set(key, probe);
    }
    return probe;
  };
}

type StoredIntent = Pick<SandboxCreationIntent, "id" | "instanceId" | "companyId" | "creationName" | "creator" | "createdAt" | "nextAttemptAt" | "settleDeadline">;

/** A stored intent with its times as ISO strings (as the sweep's pager reads them). */
export type IntentAsRead = Omit<StoredIntent, "createdAt" | "nextAttemptAt" | "settleDeadline"> & { createdAt: string; nextAttemptAt: string; settleDeadline: string };

/** The creation-intent evidence of a stored intent, before the provider is asked. */
export function intentEvidence(
  ctx: ControllerContext,
  intent: StoredIntent,
  committedLease: boolean,
  now: Date,
  probe: (record: PartialIdentity | null) => Probe = (record) => probeFor(ctx, record),
): CreationIntentEvidence {
  const read = { ...intent, createdAt: intent.createdAt.toISOString(), nextAttemptAt: intent.nextAttemptAt.toISOString(), settleDeadline: intent.settleDeadline.toISOString() };
  return pageEvidence(ctx, now.toISOString(), probe)(read, committedLease);
}

/**
 * `intentEvidence` for the rows of one page, all judged at one `now` (an ISO string): what
 * is the same for every row (the clock, the observer) is built once per page (the
 * pass judges every pending intent, and per-row work was most of its time over the raw scan).
 */
export function pageEvidence(
  ctx: ControllerContext,
  now: string,
  probe: (record: PartialIdentity | null) => Probe = (record) => probeFor(ctx, record),
): (intent: IntentAsRead, committedLease: boolean) => CreationIntentEvidence {
  const observer = evidenceIdentity(ctx.identity);
  return (intent, committedLease) => {
    const creator = asIdentity(intent.creator);
    return {
      kind: "creation_intent",
      now,
      intent: {
        id: intent.id,
        instanceId: intent.instanceId,
        companyId: intent.companyId,
        status: "pending",
        creationName: intent.creationName,
        createdAt: intent.createdAt,
        nextAttemptAt: intent.nextAttemptAt,
        settleDeadline: intent.settleDeadline,
        creator,
      },
      observer,
      creatorProbe: probe(creator),
      committedLease,
      inspection: null,
    };
  };
}
