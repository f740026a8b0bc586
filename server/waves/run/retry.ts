import { retryRun } from "../../runs/retry";
import type { WaveObservation } from "../step";
import type { WaveContext } from "./context";

/**
 * Retry where the catalogue offers it (docs/rules.md §2.7), as an impatient board user: the
 * clicks `nextWaveStep` asks for (two) at once, all of which must land on the same successor (R3).
 */
export async function clickRetry(ctx: WaveContext, a: { key: string; runId: string; failureCode: string | null; clicks: number }): Promise<WaveObservation> {
  const { key, runId, failureCode } = a;
  const actor = { id: `wave:${ctx.id}`, role: "board" };
  const clicks = await Promise.allSettled(Array.from({ length: a.clicks }, () => retryRun(ctx.db, runId, actor)));
  // A click the server could not take (a busy database) is one a board user makes again:
  // it is noted, not the end of the wave. R3 judges the successors the database holds.
  for (const c of clicks) if (c.status === "rejected") ctx.note("retry", `${key}: a Retry click failed: ${c.reason instanceof Error ? c.reason.message.split("\n")[0] : String(c.reason)}`);
  const successors = [...new Set(clicks.flatMap((c) => (c.status === "fulfilled" ? [c.value.run.id] : [])))];
  if (successors.length > 0) ctx.note("retry", `${key}: Retry after ${failureCode} → run ${successors.join(" and ")}${successors.length > 1 ? " (TWO successors)" : ""}`);
  return { kind: "retried", key, successors: successors.length };
}
