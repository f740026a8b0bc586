import { Badge, Empty, Section } from "../ui";
import type { Detail } from "./detail";

/** Each turn the agent ran, its exit code and the tail of its output. */
export function TurnLogSection({ detail: d }: { detail: Detail }) {
  return (
    <Section title="Turn log" id="turn-log">
      <p className="mb-2 text-xs text-zinc-700 dark:text-zinc-300">
        Agent command: <code className="font-mono">{d.run.agentCommand ?? "the demo agent (runner/demo-agent.mjs)"}</code>
        {" · "}
        Turn budget: {d.run.turnTimeoutMs !== null ? `${d.run.turnTimeoutMs / 1000} s (this run's own)` : "the controller's default (RUNWARDEN_TURN_TIMEOUT_MS)"}
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
  );
}
