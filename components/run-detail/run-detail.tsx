"use client";

import { useQuery, useQueryClient } from "@tanstack/react-query";
import Link from "next/link";
import { useState } from "react";
import { toast } from "sonner";
import { LIVE } from "@/trpc/live";
import { useTRPC } from "@/trpc/react";
import type { RouterOutputs } from "@/trpc/types";
import { ChecksTable } from "../checks-table";
import { Badge, buttonClass, Empty, ErrorNotice, Field, JsonBlock, JsonValue, linkClass, Loading, RelativeTime, Section, shortId, statusTone, TableWrap, tableClass, tdClass, thClass } from "../ui";
import { RetryPanel } from "./retry-panel";

type Detail = RouterOutputs["runs"]["get"];

/** What a board user reads first: why the run is where it is, and what to do. */
function plainState(d: Detail): { reason: string; next: string | null } {
  if (d.failure) return { reason: d.failure.message, next: d.failure.nextAction };
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
    case "cancelled":
      return { reason: "The run was cancelled.", next: null };
  }
}

function download(filename: string, value: unknown) {
  const url = URL.createObjectURL(new Blob([`${JSON.stringify(value, null, 2)}\n`], { type: "application/json" }));
  const a = document.createElement("a");
  a.href = url;
  a.download = filename;
  document.body.appendChild(a);
  a.click();
  a.remove();
  URL.revokeObjectURL(url);
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

export function RunDetail({ id }: { id: string }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const detail = useQuery({ ...trpc.runs.get.queryOptions({ id }), ...LIVE });
  const [downloading, setDownloading] = useState(false);

  if (detail.isPending) return <Loading label="Loading the run…" />;
  if (detail.isError) return <ErrorNotice title="Could not load this run." error={detail.error} />;
  const d = detail.data;
  const current = d.retry.current;
  // Once retried, this run's own next step is done: what matters is the run that replaced it.
  const { reason, next } = current ? { reason: d.failure ? d.failure.message : plainState(d).reason, next: null } : plainState(d);

  /** The stored bundles, each one accepted by `runwarden decide`. */
  const fetchBundles = () => queryClient.fetchQuery({ ...trpc.runs.evidence.queryOptions({ id }), staleTime: 0 });
  const downloadAll = async () => {
    setDownloading(true);
    try {
      const bundles = await fetchBundles();
      download(`runwarden-evidence-${id}.json`, bundles.map((b) => b.evidence));
      toast.success(`Downloaded ${bundles.length} evidence bundle${bundles.length === 1 ? "" : "s"}.`);
    } catch (err) {
      toast.error(`Could not download the evidence: ${err instanceof Error ? err.message : String(err)}`);
    } finally {
      setDownloading(false);
    }
  };
  const downloadOne = async (proofId: string) => {
    try {
      const bundle = (await fetchBundles()).find((b) => b.proofId === proofId);
      if (!bundle) throw new Error("the proof is not stored any more");
      download(`runwarden-evidence-${proofId}.json`, bundle.evidence);
    } catch (err) {
      toast.error(`Could not download the bundle: ${err instanceof Error ? err.message : String(err)}`);
    }
  };

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
        <div className="mt-4">{current ? <Successor current={current} successorId={d.retry.successorId ?? current.id} /> : <RetryPanel detail={d} />}</div>
      </div>

      <dl className="mt-6 grid grid-cols-2 gap-4 sm:grid-cols-3 lg:grid-cols-6">
        <Field label="Company">
          <span className="font-mono">{d.run.companyId}</span>
        </Field>
        <Field label="Task">
          <span className="font-mono">{d.run.taskId}</span>
        </Field>
        <Field label="Agent">{d.run.agent}</Field>
        <Field label="Provider / target">
          {d.run.provider} / {d.run.target}
        </Field>
        <Field label="Sandbox mode">{d.run.sandboxMode}</Field>
        <Field label="Owner">{d.run.owner}</Field>
        <Field label="Provider attempts">
          {d.run.providerAttempts} of {d.run.maxProviderAttempts}
        </Field>
        <Field label="Turns">
          {d.run.turnsDone} of {d.run.turnsPlanned}
        </Field>
        <Field label="Restarts crossed">{d.run.restarts}</Field>
        <Field label="Recovery">{[d.run.recoveryMode, d.run.recoveryState].filter(Boolean).join(" · ") || "—"}</Field>
        <Field label="Created">
          <RelativeTime date={d.run.createdAt} />
        </Field>
        <Field label="Finished">
          <RelativeTime date={d.run.finishedAt} />
        </Field>
      </dl>

      <Section
        title="Proofs"
        id="proofs"
        actions={
          <button type="button" className={buttonClass.secondary} onClick={() => void downloadAll()} disabled={downloading || d.proofs.length === 0} data-testid="download-evidence">
            {downloading ? "Preparing…" : "Download evidence"}
          </button>
        }
      >
        <p className="mb-3 text-xs text-zinc-700 dark:text-zinc-300">
          Each decision exactly as the engine recorded it. The download is a JSON array of the evidence bundles; the file as it is (or a single proof&apos;s bundle) is accepted by{" "}
          <code>npm run -s runwarden -- decide FILE</code>, one verdict per bundle.
        </p>
        {d.proofs.length === 0 ? (
          <Empty>No proofs recorded for this run.</Empty>
        ) : (
          <ol className="flex flex-col gap-4">
            {d.proofs.map((p) => (
              <li key={p.id} className="rounded border border-zinc-200 p-4 dark:border-zinc-800" data-testid="proof" data-proof-kind={p.kind}>
                <div className="flex flex-wrap items-center gap-2">
                  <h3 className="font-mono text-sm font-semibold">{p.kind}</h3>
                  <Badge tone={["admitted", "restart_bootstrap", "reclaim", "commit", "release"].includes(p.verdict) ? "good" : p.code ? "bad" : "neutral"}>{p.verdict}</Badge>
                  {p.code ? <span className="font-mono text-xs">{p.code}</span> : null}
                  {p.reason ? <span className="text-xs text-zinc-700 dark:text-zinc-300">reason: {p.reason}</span> : null}
                  <span className="ml-auto text-xs text-zinc-700 dark:text-zinc-300">
                    by <span className="font-mono">{shortId(p.evaluatedBy)}</span> · <RelativeTime date={p.evaluatedAt} />
                  </span>
                  <button type="button" className={`${linkClass} text-xs`} onClick={() => void downloadOne(p.id)}>
                    Download bundle
                  </button>
                </div>
                {p.failure ? <p className="mt-2 text-sm">{p.failure.message}</p> : null}
                <div className="mt-3">
                  {p.checks ? <ChecksTable checks={p.checks} label={`Checks of the ${p.kind} proof`} proof={p} /> : <JsonBlock value={p.checksRaw} label="Checks as stored (not a list of checks)" />}
                </div>
              </li>
            ))}
          </ol>
        )}
      </Section>

      <Section title="Turn log" id="turn-log">
        <p className="mb-2 text-xs text-zinc-700 dark:text-zinc-300">
          Agent command: <code className="font-mono">{d.run.agentCommand ?? "the demo agent (runner/demo-agent.mjs)"}</code>
        </p>
        {d.turnLog.length === 0 ? (
          <Empty>No turn has run yet.</Empty>
        ) : (
          <ol className="space-y-2" data-testid="turn-log">
            {d.turnLog.map((t) => (
              <li key={`${t.turn}-${t.at.toISOString()}`} className="rounded border border-zinc-200 p-2 dark:border-zinc-800">
                <div className="flex flex-wrap items-center gap-2 text-sm">
                  <span className="font-medium">Turn {t.turn}</span>
                  <Badge tone={t.exitCode === 0 ? "good" : "bad"}>exit {t.exitCode ?? "none"}</Badge>
                  {t.durationMs !== null ? <span className="text-xs text-zinc-700 dark:text-zinc-300">{Math.round(t.durationMs)} ms</span> : null}
                </div>
                {t.outputTail ? (
                  <pre className="mt-1 max-h-48 overflow-auto rounded bg-zinc-50 p-2 font-mono text-xs whitespace-pre-wrap dark:bg-zinc-900" aria-label={`Output of turn ${t.turn}`}>
                    {t.outputTail}
                  </pre>
                ) : null}
              </li>
            ))}
          </ol>
        )}
      </Section>

      <Section title="Timeline" id="timeline">
        {d.events.length === 0 ? (
          <Empty>No events.</Empty>
        ) : (
          <>
            {d.eventsTruncated ? <p className="mb-2 text-xs text-zinc-700 dark:text-zinc-300">Showing the newest {d.events.length} events.</p> : null}
            <TableWrap label="Run events">
              <table className={tableClass} data-testid="timeline">
                <thead className="bg-zinc-50 dark:bg-zinc-900">
                  <tr>
                    <th scope="col" className={thClass}>
                      When
                    </th>
                    <th scope="col" className={thClass}>
                      Event
                    </th>
                    <th scope="col" className={thClass}>
                      Controller
                    </th>
                    <th scope="col" className={thClass}>
                      Data
                    </th>
                  </tr>
                </thead>
                <tbody className="divide-y divide-zinc-100 dark:divide-zinc-800">
                  {d.events.map((e) => (
                    <tr key={e.id}>
                      <td className={tdClass}>
                        <time dateTime={e.at.toISOString()} className="font-mono text-xs whitespace-nowrap">
                          {e.at.toISOString().replace("T", " ").replace("Z", "")}
                        </time>
                      </td>
                      <td className={`${tdClass} font-mono text-xs`}>{e.type}</td>
                      <td className={`${tdClass} font-mono text-xs`} title={e.bootId ?? undefined}>
                        {e.bootId ? shortId(e.bootId) : "—"}
                      </td>
                      <td className={`${tdClass} text-xs`}>{e.data == null ? "—" : <JsonValue value={e.data} />}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </TableWrap>
          </>
        )}
      </Section>

      <Section title="Recovery claims" id="claims">
        {d.claims.length === 0 ? (
          <Empty>No recovery claims: this run was never picked up after a restart.</Empty>
        ) : (
          <ul className="flex flex-col gap-3">
            {d.claims.map((c) => (
              <li key={c.id} className="rounded border border-zinc-200 p-4 dark:border-zinc-800">
                <dl className="grid grid-cols-2 gap-3 sm:grid-cols-4">
                  <Field label="Kind">
                    <span className="font-mono">{c.kind}</span>
                  </Field>
                  <Field label="Restart">{c.restartKind}</Field>
                  <Field label="Disposition">{c.disposition ?? "—"}</Field>
                  <Field label="Claimed by">
                    <span className="font-mono" title={c.controllerBootId}>
                      {shortId(c.controllerBootId)}
                    </span>{" "}
                    <RelativeTime date={c.createdAt} />
                  </Field>
                  <Field label="Provider lease">
                    <span className="font-mono">{c.providerLeaseId ?? "—"}</span>
                  </Field>
                  <Field label="Remote cwd">
                    <span className="font-mono">{c.remoteCwd ?? "—"}</span>
                  </Field>
                  <Field label="Runner instance / session">
                    <span className="font-mono">
                      {c.runnerInstanceId ?? "—"} / {c.sessionId ?? "—"}
                    </span>
                  </Field>
                  <Field label="Proofs">{c.proofIds.length}</Field>
                </dl>
              </li>
            ))}
          </ul>
        )}
      </Section>

      <Section title="Leases" id="leases">
        {d.leases.length === 0 ? (
          <Empty>No sandbox leases.</Empty>
        ) : (
          <TableWrap label="Leases">
            <table className={tableClass} data-testid="leases">
              <thead className="bg-zinc-50 dark:bg-zinc-900">
                <tr>
                  {["Sandbox", "Acquisition", "Status", "Cleanup", "Teardown claim", "Receipt", "Created"].map((h) => (
                    <th key={h} scope="col" className={thClass}>
                      {h}
                    </th>
                  ))}
                </tr>
              </thead>
              <tbody className="divide-y divide-zinc-100 dark:divide-zinc-800">
                {d.leases.map((l) => (
                  <tr key={l.id}>
                    <td className={`${tdClass} font-mono text-xs`}>
                      <div>{l.sandboxName ?? "—"}</div>
                      <div className="text-zinc-700 dark:text-zinc-300">{l.providerLeaseId ?? ""}</div>
                      {l.turn !== null ? <div>turn {l.turn}</div> : null}
                    </td>
                    <td className={tdClass}>{l.acquisitionOutcome}</td>
                    <td className={tdClass}>
                      <Badge tone={l.status === "active" ? "info" : l.status === "failed" ? "bad" : l.status === "pending_cleanup" ? "warn" : "neutral"}>{l.status}</Badge>
                    </td>
                    <td className={`${tdClass} text-xs`}>
                      {l.cleanupStatus ?? "—"}
                      {l.cleanupAttempts ? ` · ${l.cleanupAttempts} attempt(s)` : ""}
                      {l.lastCleanupError ? <div className="text-red-800 dark:text-red-300">{l.lastCleanupError}</div> : null}
                    </td>
                    <td className={`${tdClass} text-xs`}>
                      {l.teardownClaim ? (
                        <>
                          <div className="font-mono">attempt {shortId(l.teardownClaim.attemptId)}</div>
                          <div>{l.teardownClaim.fencedUntil ? <>fenced until <RelativeTime date={l.teardownClaim.fencedUntil} /></> : "fence released"}</div>
                          <JsonValue value={l.teardownClaim.record} />
                        </>
                      ) : (
                        "—"
                      )}
                    </td>
                    <td className={`${tdClass} text-xs`}>{l.terminationReceipt == null ? "—" : <JsonValue value={l.terminationReceipt} />}</td>
                    <td className={tdClass}>
                      <RelativeTime date={l.createdAt} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </TableWrap>
        )}
      </Section>

      <Section title="Last runner state" id="runner-state">
        {d.runnerState.state == null ? (
          <Empty>No runner state was read from the sandbox.</Empty>
        ) : (
          <>
            <p className="mb-2 text-xs text-zinc-700 dark:text-zinc-300">
              Read <RelativeTime date={d.runnerState.at} /> from the sandbox&apos;s runner-state.json.
            </p>
            <JsonBlock value={d.runnerState.state} label="Last runner state" />
          </>
        )}
      </Section>

      <Section title="Lineage" id="lineage">
        {d.lineage.previous.length === 0 && d.lineage.next.length === 0 ? (
          <Empty>This run neither retries another run nor was retried.</Empty>
        ) : (
          <ol className="flex flex-col gap-1 text-sm" data-testid="lineage">
            {[...d.lineage.previous, { id: d.run.id, status: d.run.status, failureCode: d.run.failureCode, createdAt: d.run.createdAt }, ...d.lineage.next].map((r) => (
              <li key={r.id} className="flex flex-wrap items-center gap-2">
                {r.id === d.run.id ? (
                  <span className="font-mono font-semibold">{shortId(r.id)} (this run)</span>
                ) : (
                  <Link href={`/runs/${r.id}`} className={`${linkClass} font-mono`} title={r.id}>
                    {shortId(r.id)}
                  </Link>
                )}
                <Badge tone={statusTone(r.status)}>{r.status}</Badge>
                {r.failureCode ? <span className="font-mono text-xs">{r.failureCode}</span> : null}
                <RelativeTime date={r.createdAt} />
              </li>
            ))}
          </ol>
        )}
      </Section>

      <Section title="Creation intents" id="intents">
        {d.intents.length === 0 ? (
          <Empty>No sandbox was asked for on behalf of this run.</Empty>
        ) : (
          <ul className="flex flex-col gap-1 text-sm">
            {d.intents.map((i) => (
              <li key={i.id} className="flex flex-wrap items-center gap-2">
                <span className="font-mono text-xs">{i.creationName}</span>
                <Badge>{i.status}</Badge>
                <span className="text-xs text-zinc-700 dark:text-zinc-300">
                  {i.attempts} inspection(s) · <RelativeTime date={i.createdAt} />
                </span>
              </li>
            ))}
          </ul>
        )}
      </Section>
    </>
  );
}
