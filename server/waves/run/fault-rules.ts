import type { EmulatorAdminClient } from "../../emulator/admin-client";
import { assertNever } from "../../engine";
import type { FaultName, FaultRecord } from "../../shared/wave-report";
import type { WavePlan } from "../plan";

/** A task's fault as the emulator's rule for its run (docs/rules.md §5); null for those that land with the first kill. */
export function faultRule(fault: FaultName, runId: string) {
  switch (fault) {
    case "bind":
      return { match: { runId }, fault: { kind: "bind_conflict" as const }, times: 1 };
    case "reject":
      return { match: { runId }, fault: { kind: "reject" as const }, times: null };
    case "late":
      return { match: { runId }, fault: { kind: "late" as const, delayMs: 2500 }, times: 1 };
    case "unconnected":
      return { match: { runId }, fault: { kind: "never_connect" as const }, times: null };
    case "slow_start":
      // Longer than the wave controllers' create timeout (1.5 s): found by its name after it.
      return { match: { runId }, fault: { kind: "slow_start" as const, ms: 2500, outcome: "started" as const }, times: 1 };
    case "rate_limit":
      return { match: { runId }, fault: { kind: "rate_limit" as const, retryAfterSeconds: 1, throttler: "sandbox-lifecycle" }, times: 2 };
    case "outage":
    case "archive":
      // Provider-wide and at the first kill: set when it lands (run/faults-at-kill.ts), not here.
      return null;
    default:
      return assertNever(fault);
  }
}

/** Whether each planned fault fired: the provider applied it (its rule's uses) to that task's run. */
export async function faultRecords(admin: EmulatorAdminClient, plan: WavePlan, runsByTask: Map<string, string>, atKill: Map<FaultName, Omit<FaultRecord, "task" | "fault" | "runId">>): Promise<FaultRecord[]> {
  const rules = await admin.faults();
  return plan.tasks.flatMap((task) =>
    task.faults.map((fault) => {
      const runId = runsByTask.get(task.key) ?? null;
      const planned = faultRule(fault, runId ?? "");
      if (!planned) {
        const landed = atKill.get(fault);
        return { task: task.key, fault, runId, ...(landed ?? { fired: false, uses: 0, detail: "no kill landed for it to land with" }) };
      }
      const kind = planned.fault.kind;
      const rule = rules.find((r) => r.match.runId === runId && r.fault.kind === kind);
      const uses = rule?.used ?? 0;
      return {
        task: task.key,
        fault,
        runId,
        fired: uses > 0,
        uses,
        detail: !rule ? "no such rule at the provider" : uses > 0 ? `applied ${uses} time(s) to run ${runId}` : `never applied to run ${runId}`,
      };
    }),
  );
}
