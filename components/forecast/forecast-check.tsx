import type { RouterOutputs } from "@/trpc/types";
import { Badge, type Tone } from "../ui";

type ForecastRun = RouterOutputs["forecasts"]["get"]["runs"][number];

export const PREDICTION_TONE: Record<ForecastRun["prediction"], Tone> = { continues: "good", ends: "bad", operator: "warn" };

/** "reattach", "native_…_unproven (Retry)", or "—". */
export function predictionDetail(r: Pick<ForecastRun, "prediction" | "path" | "code" | "canRetry">): string {
  if (r.prediction === "continues") return r.path ?? "—";
  const code = r.code ?? "—";
  return r.prediction === "ends" ? `${code}${r.canRetry ? " (Retry)" : ""}` : code;
}

/** "forecast held", the difference, "not restarted", or "not restarted yet". */
export function ForecastCheckText({ outcome, check }: Pick<ForecastRun, "outcome" | "check">) {
  if (outcome === null) return <span className="text-zinc-700 dark:text-zinc-300">not restarted yet</span>;
  if (outcome === "not_restarted") return <span title="The run ended without a restart after this forecast">ended without a restart</span>;
  if (outcome === "held") {
    return (
      <span>
        <Badge tone="good">forecast held</Badge>
        {check?.actual ? <span className="ml-1">{check.actual.decidedBy}</span> : null}
      </span>
    );
  }
  return (
    <div>
      <Badge tone="bad">forecast differed</Badge>
      <ul className="mt-1 list-disc pl-4">
        {(check?.differences ?? []).map((d) => (
          <li key={d.field}>
            {d.field}: forecast <span className="font-mono">{String(d.forecast)}</span>, actual <span className="font-mono">{String(d.actual)}</span>
          </li>
        ))}
      </ul>
    </div>
  );
}
