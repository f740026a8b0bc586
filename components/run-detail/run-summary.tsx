import Link from "next/link";
import { Badge, linkClass, shortId, statusTone } from "../ui";
import type { Detail } from "./detail";
import { CancelPanel } from "./cancel-panel";
import { RetryPanel } from "./retry-panel";

/** What a board user reads first: why the run is where it is, and what to do. */
function plainState(d: Detail): { reason: string; next: string | null } {
  // A person ended it: that, not a code it carried before, is why it rests (§2.11).
  if (d.run.status === "cancelled") return { reason: cancelledLine(d), next: d.retry.blocker ? null : "Retry runs the task again, if it is still needed." };
  if (d.failure) return { reason: d.failure.message, next: d.failure.nextAction };
  if (d.providerWait) {
    const since = d.providerWait.outageSince ?? d.providerWait.since;
    return {
      reason: `The sandbox provider has been unreachable since ${utcTime(since)}${d.providerWait.lastError ? ` (last error: ${d.providerWait.lastError})` : ""}. The run waits where it stands and goes on by itself once the provider answers again.`,
      next: "Nothing to do: an outage is not the run's failure, and Retry would not help while it lasts.",
    };
  }
  switch (d.run.status) {
    case "queued":
      return { reason: "The run is waiting for a controller to start it.", next: null };
    case "starting":
      return { reason: "The run is getting its sandbox and starting the agent.", next: null };
    case "running":
      return { reason: `The agent is working (turn ${d.run.turnsDone} of ${d.run.turnsPlanned}).`, next: null };
    case "suspended":
      return { reason: "The run was paused during a server restart and waits to be picked up again.", next: "Nothing to do: a controller resumes it." };
    case "succeeded":
      return { reason: "The run finished its work.", next: null };
    case "failed":
      return { reason: "The run failed without a failure code.", next: "Ask an operator to look at the run." };
  }
}

/** "Cancelled by ana@example.com: wrong prompt." */
function cancelledLine(d: Detail): string {
  const by = d.run.cancelledBy ? ` by ${d.run.cancelledBy}` : "";
  return d.run.cancelReason ? `Cancelled${by}: ${d.run.cancelReason}` : `Cancelled${by}.`;
}

/** A time the server and the browser print alike (no locale, no hydration mismatch). */
function utcTime(d: Date): string {
  return `${d.toISOString().slice(0, 19).replace("T", " ")} UTC`;
}

/** The run that replaced this one (and the newest down the Retry chain), live. */
function Successor({ current, successorId }: { current: NonNullable<Detail["retry"]["current"]>; successorId: string }) {
  const later = current.hops > 1;
  return (
    <div className="flex flex-col gap-1 text-sm" data-testid="successor">
      <p data-testid="retry-successor">
        Retried: run{" "}
        <Link href={`/runs/${successorId}`} className={`${linkClass} font-mono`} title={successorId}>
          {successorId}
        </Link>{" "}
        replaced this one.
        {later ? (
          <>
            {" "}
            It was retried in turn; the newest run is{" "}
            <Link href={`/runs/${current.id}`} className={`${linkClass} font-mono`} title={current.id}>
              {shortId(current.id)}
            </Link>
            .
          </>
        ) : null}
      </p>
      <p className="flex flex-wrap items-center gap-2" data-testid="successor-status">
        <span>{later ? "The newest run" : "That run"} is</span>
        <Badge tone={statusTone(current.status)}>{current.status}</Badge>
        {current.failureCode ? <span className="font-mono text-xs">{current.failureCode}</span> : null}
      </p>
      {current.failureMessage ? <p data-testid="successor-reason">{current.failureMessage}</p> : null}
      {current.nextAction ? <p className="text-zinc-800 dark:text-zinc-200">Next, on that run: {current.nextAction}</p> : null}
    </div>
  );
}

/** The run's title and status, then why it is where it is, what to do, and Retry or its successor. */
export function RunSummary({ detail: d }: { detail: Detail }) {
  const current = d.retry.current;
  // Once retried, this run's own next step is done: what matters is the run that replaced it.
  const { reason, next } = current ? { reason: d.failure ? d.failure.message : plainState(d).reason, next: null } : plainState(d);
  return (
    <>
      <div className="mb-2 flex flex-wrap items-center gap-3">
        <h1 className="text-2xl font-semibold tracking-tight">
          Run <span className="font-mono text-xl">{shortId(d.run.id)}</span>
        </h1>
        <Badge tone={statusTone(d.run.status)}>{d.run.status}</Badge>
        {d.run.outcome ? <Badge tone={d.run.outcome === "terminal_failure" ? "bad" : "warn"}>{d.run.outcome.replace("_", " ")}</Badge> : null}
      </div>
      <p className="font-mono text-xs text-zinc-700 dark:text-zinc-300">{d.run.id}</p>

      <div
        className="mt-4 rounded-lg border border-zinc-300 bg-zinc-50 p-4 dark:border-zinc-700 dark:bg-zinc-900"
        data-testid="run-summary"
        aria-label="Why the run is here and what to do"
        role="region"
      >
        <p className="text-base font-medium" data-testid="plain-reason">
          {reason}
        </p>
        {next ? (
          <p className="mt-1 text-sm text-zinc-800 dark:text-zinc-200" data-testid="next-action">
            Next: {next}
          </p>
        ) : null}
        {d.run.failureCode ? (
          <p className="mt-2 text-xs text-zinc-700 dark:text-zinc-300">
            Code <span className="font-mono">{d.run.failureCode}</span>
            {d.run.failureDetail ? (
              <>
                {" "}
                · detail <span className="font-mono break-all">{d.run.failureDetail}</span>
              </>
            ) : null}
          </p>
        ) : null}
        <div className="mt-4 flex flex-col gap-3">
          {current ? <Successor current={current} successorId={d.retry.successorId ?? current.id} /> : <RetryPanel detail={d} />}
          <CancelPanel detail={d} />
        </div>
      </div>
    </>
  );
}
