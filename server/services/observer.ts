import type { ControllerContext } from "../controller/context";
import { intentEvidence, judgeExit } from "../controller/observe";
import type { SandboxCreationIntent } from "../db/client";
import { judgeCreationIntent, type CreationIntentResult, type PartialIdentity, type Verdict } from "../engine";
import type { SandboxProvider } from "../providers/types";

/**
 * What the read models (intents, orphans, overview) need from this process and its provider,
 * and nothing more: they never see the controller. Judgements are made now, in this process,
 * with its identity and a probe of its host (a creator on another host is `unknown`).
 */
export interface Observer {
  /** This instance's sandboxes at the provider, by label (never provider-wide), one provider page at a time. */
  listPagesByLabels: SandboxProvider["listPagesByLabels"];
  /** One sandbox by its exact id, read from the provider now (a dry run never trusts the inventory). */
  getById: SandboxProvider["getById"];
  /** process_exit on a recorded identity. */
  judgeExit(record: PartialIdentity | null): Verdict;
  /** creation_intent on a pending intent, before the provider is asked. */
  judgePendingIntent(intent: SandboxCreationIntent, committedLease: boolean, now: Date): CreationIntentResult;
}

/** The observer of a controller context (the dashboard's service context, or a test's). */
export function observerOf(ctx: ControllerContext): Observer {
  return {
    // Read through ctx at call time: a test's context may have no provider until it lists.
    listPagesByLabels: (labels, options) => ctx.provider.listPagesByLabels(labels, options),
    getById: (id, options) => ctx.provider.getById(id, options),
    judgeExit: (record) => judgeExit(ctx, record).verdict,
    judgePendingIntent: (intent, committedLease, now) => judgeCreationIntent(intentEvidence(ctx, intent, committedLease, now)),
  };
}
