import { Empty, JsonValue, Section, shortId, tableClass, TableWrap, tdClass, thClass } from "../ui";
import type { Detail } from "./detail";

/** The run's events, newest last, with the controller that wrote each. */
export function TimelineSection({ detail: d }: { detail: Detail }) {
  return (
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
  );
}
