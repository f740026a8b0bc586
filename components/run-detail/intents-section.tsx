import { Badge, Empty, RelativeTime, Section } from "../ui";
import type { Detail } from "./detail";

/** The sandbox creation intents recorded for this run. */
export function IntentsSection({ detail: d }: { detail: Detail }) {
  return (
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
  );
}
