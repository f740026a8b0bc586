import { Badge, JsonValue, TableWrap, tableClass, tdClass, thClass } from "./ui";

export interface CheckRow {
  name: string;
  ok: boolean;
  expected?: unknown;
  actual?: unknown;
}

/** Every check of a verdict as the engine recorded it: expected, actual, pass. */
export function ChecksTable({ checks, label }: { checks: CheckRow[]; label: string }) {
  if (checks.length === 0) return <p className="text-sm text-zinc-700 dark:text-zinc-300">No checks were recorded.</p>;
  return (
    <TableWrap label={label}>
      <table className={tableClass} data-testid="checks">
        <thead className="bg-zinc-50 dark:bg-zinc-900">
          <tr>
            <th scope="col" className={thClass}>
              Check
            </th>
            <th scope="col" className={thClass}>
              Expected
            </th>
            <th scope="col" className={thClass}>
              Actual
            </th>
            <th scope="col" className={thClass}>
              Pass
            </th>
          </tr>
        </thead>
        <tbody className="divide-y divide-zinc-100 dark:divide-zinc-800">
          {checks.map((c, i) => (
            <tr key={`${c.name}-${i}`} data-check={c.name}>
              <td className={`${tdClass} font-mono text-xs`}>{c.name}</td>
              <td className={`${tdClass} text-xs`}>
                <JsonValue value={"expected" in c ? c.expected : undefined} />
              </td>
              <td className={`${tdClass} text-xs`}>
                <JsonValue value={"actual" in c ? c.actual : undefined} />
              </td>
              <td className={tdClass}>{c.ok ? <Badge tone="good">✓ pass</Badge> : <Badge tone="bad">✗ fail</Badge>}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </TableWrap>
  );
}
