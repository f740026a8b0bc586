import { Empty, JsonBlock, RelativeTime, Section } from "../ui";
import type { Detail } from "./detail";

/** The last runner-state.json read from the sandbox. */
export function RunnerStateSection({ detail: d }: { detail: Detail }) {
  return (
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
  );
}
