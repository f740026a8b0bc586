import { Empty, Field, RelativeTime, Section, shortId } from "../ui";
import type { Detail } from "./detail";

/** The recovery claims controllers made on this run after restarts. */
export function ClaimsSection({ detail: d }: { detail: Detail }) {
  return (
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
  );
}
