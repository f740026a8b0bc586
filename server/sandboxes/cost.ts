import type { SandboxView } from "../providers/types";
import { LIVE, type SandboxRecords } from "./records";

/**
 * Cost accrued as an orphan: `hourlyCost` × the hours since it became one. It became one at
 * the earlier of (a) when its run finished and (b) when its last lease ended (all leases
 * ended); with neither, when its creation intent was made; with no intent either, when it
 * was created. Never earlier than its own `createdAt` (it cost nothing before it existed).
 */

export const ORPHAN_SINCE_RULES = ["run_finished", "lease_ended", "intent_created", "created"] as const;

export function orphanSince(sandbox: SandboxView, { intent, leases, run }: SandboxRecords): { orphanSince: Date; orphanSinceRule: (typeof ORPHAN_SINCE_RULES)[number] } {
  const created = new Date(sandbox.createdAt);
  const candidates: Array<{ at: Date; rule: "run_finished" | "lease_ended" }> = [];
  if (run && !LIVE.has(run.status) && run.finishedAt) candidates.push({ at: run.finishedAt, rule: "run_finished" });
  const ended = leases.map((l) => l.endedAt);
  if (ended.length && ended.every((e): e is Date => e !== null)) {
    candidates.push({ at: new Date(Math.max(...ended.map((e) => e.getTime()))), rule: "lease_ended" });
  }
  candidates.sort((a, b) => a.at.getTime() - b.at.getTime());
  const first = candidates[0];
  const pick = first ?? (intent ? { at: intent.createdAt, rule: "intent_created" as const } : { at: created, rule: "created" as const });
  return { orphanSince: pick.at > created ? pick.at : created, orphanSinceRule: pick.rule };
}

export const round6 = (n: number) => Math.round(n * 1e6) / 1e6;

/** USD accrued at `hourlyCost` from `since` to `now`. */
export function accruedCost(hourlyCost: number, since: Date, now: Date): number {
  const hours = Math.max(0, now.getTime() - since.getTime()) / 3_600_000;
  return round6(hourlyCost * hours);
}
