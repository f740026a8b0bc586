import { Badge, Empty, JsonValue, RelativeTime, Section, shortId, tableClass, TableWrap, tdClass, thClass } from "../ui";
import type { Detail } from "./detail";

/** The sandbox leases of the run, with their cleanup and teardown state. */
export function LeasesSection({ detail: d }: { detail: Detail }) {
  return (
    <Section title="Leases" id="leases">
      {d.leases.length === 0 ? (
        <Empty>No sandbox leases.</Empty>
      ) : (
        <TableWrap label="Leases">
          <table className={tableClass} data-testid="leases">
            <thead className="bg-zinc-50 dark:bg-zinc-900">
              <tr>
                {["Sandbox", "Acquisition", "Status", "Idle policy", "Cleanup", "Teardown claim", "Receipt", "Created"].map((h) => (
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
                  <td className={`${tdClass} text-xs`} data-testid="idle-policy">
                    <IdlePolicy policy={l.idlePolicy} />
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
  );
}

/** What the provider was told at create (Daytona's autoStopInterval / autoDeleteInterval). */
function IdlePolicy({ policy }: { policy: Detail["leases"][number]["idlePolicy"] }) {
  if (policy.autoStopMinutes === null && policy.autoDeleteMinutes === null) return <>not recorded</>;
  const minutes = (m: number) => (m % 60 === 0 ? `${m / 60} h` : `${m} min`);
  return (
    <>
      <div>{policy.autoStopMinutes === null ? "auto-stop: provider default" : `stops after ${minutes(policy.autoStopMinutes)} idle`}</div>
      <div>
        {policy.autoDeleteMinutes === null
          ? "auto-delete: provider default"
          : policy.autoDeleteMinutes < 0
            ? "never deleted when stopped"
            : policy.autoDeleteMinutes === 0
              ? "deleted when it stops"
              : `deleted ${minutes(policy.autoDeleteMinutes)} after it stops`}
      </div>
    </>
  );
}
