import { assertNever, isJudgement, readChecks, type CheckReading } from "@/server/shared/engine";
import { Badge, JsonValue, TableWrap, tableClass, tdClass, thClass } from "./ui";

export interface CheckRow {
  name: string;
  ok: boolean;
  expected?: unknown;
  actual?: unknown;
}

/** Which way one check pointed, in words (server/engine/readings.ts says why it differs by kind). */
function Reading({ reading }: { reading: CheckReading }) {
  switch (reading.kind) {
    case "went_on":
      return <span className="text-xs text-zinc-700 dark:text-zinc-300">→ next check</span>;
    case "decided":
      return (
        <Badge tone="info">
          → {reading.verdict}
          {reading.reason ? ` (${reading.reason})` : ""}
        </Badge>
      );
    case "held":
      return <Badge tone="good">✓ holds</Badge>;
    case "refused":
      return <Badge tone="bad">✗ does not hold</Badge>;
    default:
      return assertNever(reading);
  }
}

/**
 * Every check of a verdict as the engine recorded it: what was expected, what was observed,
 * and which way it pointed. A judgement's "no" is an answer, not a failure (process_exit's
 * pid_live "no" is what proves an exit); only a gate's unmet condition reads as one.
 */
export function ChecksTable({ checks, label, proof }: { checks: CheckRow[]; label: string; proof: { kind: string; verdict: string; reason: string | null } }) {
  if (checks.length === 0) return <p className="text-sm text-zinc-700 dark:text-zinc-300">No checks were recorded.</p>;
  const judgement = isJudgement(proof.kind);
  const readings = readChecks(proof, checks);
  return (
    <TableWrap label={label}>
      <table className={tableClass} data-testid="checks">
        <thead className="bg-zinc-50 dark:bg-zinc-900">
          <tr>
            <th scope="col" className={thClass}>
              {judgement ? "Question" : "Condition"}
            </th>
            <th scope="col" className={thClass}>
              Expected
            </th>
            <th scope="col" className={thClass}>
              Observed
            </th>
            {judgement ? (
              <th scope="col" className={thClass}>
                Answer
              </th>
            ) : null}
            <th scope="col" className={thClass}>
              {judgement ? "Pointed to" : "Result"}
            </th>
          </tr>
        </thead>
        <tbody className="divide-y divide-zinc-100 dark:divide-zinc-800">
          {checks.map((c, i) => {
            const reading = readings[i] ?? { kind: "went_on" };
            return (
              <tr key={`${c.name}-${i}`} data-check={c.name} data-reading={reading.kind}>
                <td className={`${tdClass} font-mono text-xs`}>{c.name}</td>
                <td className={`${tdClass} text-xs`}>
                  <JsonValue value={"expected" in c ? c.expected : undefined} />
                </td>
                <td className={`${tdClass} text-xs`}>
                  <JsonValue value={"actual" in c ? c.actual : undefined} />
                </td>
                {judgement ? <td className={`${tdClass} text-xs`}>{c.ok ? "yes" : "no"}</td> : null}
                <td className={tdClass}>
                  <Reading reading={reading} />
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </TableWrap>
  );
}
