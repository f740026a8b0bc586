import type { Db } from "../../db/client";
import type { EmulatorAdminClient } from "../../emulator/admin-client";
import type { FaultName, FaultRecord } from "../../shared/wave-report";
import type { WavePlan } from "../plan";

/** How long the `outage` fault keeps the provider answering 503 to everything. */
export const WAVE_OUTAGE_MS = 5_000;

/**
 * The faults that land with the first kill, between the stop of its controller and the start
 * of the next: `outage` (every provider call answers 503 for WAVE_OUTAGE_MS) and `archive` (the
 * faulted task's sandbox stopped and archived, as auto-stop then auto-archive would while no
 * controller runs). Each says afterwards what it did.
 */
export class KillEffects {
  private outage: { ruleId: string; fromMs: number; toMs: number | null; timer: NodeJS.Timeout | null } | null = null;
  private archived: { sandboxId: string; runId: string; atMs: number } | null = null;
  private archiveMiss: string | null = null;
  private done = false;

  constructor(
    private readonly plan: WavePlan,
    private readonly admin: EmulatorAdminClient,
    private readonly db: Db,
    private readonly runsByTask: Map<string, string>,
    private readonly t0: number,
    private readonly note: (kind: string, detail: string) => void,
  ) {}

  /** Whether the first kill may land now: an archive needs its run in session on a sandbox (or over, when it cannot land at all). */
  async readyToLand(): Promise<boolean> {
    if (this.done) return true;
    const task = this.plan.tasks.find((t) => t.faults.includes("archive"));
    const runId = task ? this.runsByTask.get(task.key) : undefined;
    if (!runId) return true;
    const run = await this.db.run.findUnique({ where: { id: runId }, select: { status: true, phase: true, leases: { where: { status: "active" }, select: { id: true } } } });
    if (!run || !["queued", "starting", "running", "suspended"].includes(run.status)) return true;
    return run.phase === "session_open" && run.leases.length > 0;
  }

  /** Runs once, at the first kill, before its restart. */
  async beforeRestart(): Promise<void> {
    if (this.done) return;
    this.done = true;
    const faults = new Set(this.plan.tasks.flatMap((t) => t.faults));
    if (faults.has("outage")) {
      const rule = await this.admin.setFault({ fault: { kind: "http_error", status: 503 } });
      const fromMs = Date.now() - this.t0;
      this.outage = { ruleId: rule.id, fromMs, toMs: null, timer: null };
      this.note("fault", `outage: the provider answers 503 to every call for ${WAVE_OUTAGE_MS} ms`);
      this.outage.timer = setTimeout(() => void this.endOutage(), WAVE_OUTAGE_MS);
    }
    const task = this.plan.tasks.find((t) => t.faults.includes("archive"));
    if (task) {
      const runId = this.runsByTask.get(task.key);
      const lease = runId ? await this.db.environmentLease.findFirst({ where: { runId, status: "active", providerLeaseId: { not: null } }, orderBy: { createdAt: "desc" } }) : null;
      if (!lease?.providerLeaseId || !runId) {
        this.archiveMiss = `run ${runId ?? "?"} held no sandbox when the kill landed`;
      } else {
        try {
          await this.admin.setState(lease.providerLeaseId, "archived", undefined, { fromStarted: true });
          this.archived = { sandboxId: lease.providerLeaseId, runId, atMs: Date.now() - this.t0 };
          this.note("fault", `archive: sandbox ${lease.providerLeaseId} of run ${runId} stopped and archived while no controller runs`);
        } catch (err) {
          this.archiveMiss = `sandbox ${lease.providerLeaseId} could not be archived: ${err instanceof Error ? err.message : String(err)}`;
        }
      }
    }
  }

  async endOutage(): Promise<void> {
    const o = this.outage;
    if (!o || o.toMs !== null) return;
    if (o.timer) clearTimeout(o.timer);
    o.toMs = Date.now() - this.t0;
    // Its uses are read before it goes: a cleared rule keeps no count.
    this.outageUses = (await this.admin.faults().catch(() => [])).find((r) => r.id === o.ruleId)?.used ?? 0;
    await this.admin.clearFaults(o.ruleId).catch(() => {});
    this.note("fault", `outage over after ${o.toMs - o.fromMs} ms`);
  }

  /** The records of the two faults, with how long the outage lasted and which runs waited through it. */
  async records(waveRunIds: string[]): Promise<Map<FaultName, Omit<FaultRecord, "task" | "fault" | "runId">>> {
    await this.endOutage();
    const out = new Map<FaultName, Omit<FaultRecord, "task" | "fault" | "runId">>();
    if (this.outage) {
      const uses = this.outageUses;
      const waited = await this.db.proof.findMany({ where: { runId: { in: waveRunIds }, kind: "recovery_attempt", verdict: "wait" }, distinct: ["runId"], select: { runId: true } });
      const lasted = (this.outage.toMs ?? 0) - this.outage.fromMs;
      out.set("outage", {
        fired: uses > 0,
        uses,
        detail: `the provider answered 503 to ${uses} call(s) for ${lasted} ms from ${this.outage.fromMs} ms; ${waited.length} run(s) waited through it (recovery_attempt proofs "wait")`,
      });
    }
    if (this.archived) out.set("archive", { fired: true, uses: 1, detail: `sandbox ${this.archived.sandboxId} of run ${this.archived.runId} archived at ${this.archived.atMs} ms while no controller ran` });
    else if (this.archiveMiss) out.set("archive", { fired: false, uses: 0, detail: this.archiveMiss });
    return out;
  }

  /** Uses of the outage rule, read when it was cleared. */
  private outageUses = 0;
}

