import fs from "node:fs";
import type { EmulatorContext } from "./context";
import { softDelete } from "./sandbox-api";
import { killSandboxProcesses } from "./sandbox-host";

/**
 * Auto-stop (Daytona): a started sandbox without toolbox or lifecycle activity for
 * `autoStopInterval` minutes stops, its processes killed, even while they run. A toolbox
 * call still in progress (a turn being polled) is activity.
 */
export async function autoStop(ctx: EmulatorContext): Promise<void> {
  const { store, config, inFlight } = ctx;
  const now = new Date();
  await store.settle(now);
  for (const idle of await store.idle(now, config.autoStopMinuteMs)) {
    if (inFlight.has(idle.id)) {
      await store.touch(idle.id, now);
      continue;
    }
    const stopped = await store.transaction(async (tx) => {
      await tx.query("SELECT 1 FROM emulator_sandbox WHERE id = $1 FOR UPDATE", [idle.id]);
      const row = await store.byId(idle.id, tx);
      // Re-checked under the lock: activity may have come in meanwhile.
      const last = row?.last_activity_at ?? row?.updated_at;
      if (!row || row.state !== "started" || row.destroyed_at || !last || last.getTime() !== (idle.last_activity_at ?? idle.updated_at).getTime()) return null;
      // An ephemeral sandbox (autoDeleteInterval 0) is deleted instead (sandbox.manager.ts autostopCheck, isEphemeral).
      if (row.auto_delete_interval === 0) return softDelete(ctx, row, now, tx);
      const ms = config.transitionMs.stop;
      return store.setState(row.id, ms > 0 ? "stopping" : "stopped", "stopped", now, tx, { transitionUntil: ms > 0 ? new Date(now.getTime() + ms) : null });
    });
    if (!stopped) continue;
    ctx.log(`emulator: ${stopped.name} auto-stopped after ${stopped.auto_stop_interval} min without activity`);
    await killSandboxProcesses(ctx.hostOf(stopped));
  }
  await autoArchive(ctx, now);
  await autoDelete(ctx, now);
}

/**
 * Auto-delete (Daytona, sandbox.entity.ts `autoDeleteInterval`, default -1 = never; 0 = at
 * stop): a sandbox stopped that long is deleted (sandbox.manager.ts autoDeleteCheck: state and
 * desired state `stopped`, last activity older than the interval). Before auto-archive can take
 * it only when the interval is the shorter one, as there.
 */
async function autoDelete(ctx: EmulatorContext, now: Date): Promise<void> {
  const { store, config } = ctx;
  for (const row of await store.deletable(now, config.autoStopMinuteMs)) {
    const deleted = await store.transaction(async (tx) => {
      await tx.query("SELECT 1 FROM emulator_sandbox WHERE id = $1 FOR UPDATE", [row.id]);
      const current = await store.byId(row.id, tx);
      // Re-checked under the lock: a start may have come in meanwhile.
      if (!current || current.state !== "stopped" || current.desired_state !== "stopped" || current.destroyed_at) return null;
      return softDelete(ctx, current, now, tx);
    });
    if (!deleted) continue;
    ctx.log(`emulator: ${row.name} auto-deleted after ${row.auto_delete_interval} min stopped`);
    await fs.promises.rm(ctx.hostOf(deleted).root, { recursive: true, force: true });
  }
}

/**
 * Auto-archive (Daytona, sandbox.entity.ts `autoArchiveInterval`, default 7 days): a sandbox
 * stopped that long is archived (`archiving`, then `archived`); a start restores it.
 */
async function autoArchive(ctx: EmulatorContext, now: Date): Promise<void> {
  const { store, config } = ctx;
  for (const row of await store.archivable(now, config.autoStopMinuteMs)) {
    const ms = config.transitionMs.stop;
    const archived = await store.transaction(async (tx) => {
      const current = await store.byId(row.id, tx);
      if (!current || current.state !== "stopped" || current.destroyed_at) return null;
      return store.setState(row.id, ms > 0 ? "archiving" : "archived", "archived", now, tx, { transitionUntil: ms > 0 ? new Date(now.getTime() + ms) : null });
    });
    if (archived) ctx.log(`emulator: ${archived.name} auto-archived after ${archived.auto_archive_interval} min stopped`);
  }
}

/** Runs `autoStop` every tenth of an auto-stop minute (25 ms – 1 s), one sweep at a time. */
export function startAutoStopSweeper(ctx: EmulatorContext): () => void {
  let sweeping = false;
  const sweeper = setInterval(() => {
    if (sweeping) return;
    sweeping = true;
    void autoStop(ctx)
      .catch((err: unknown) => ctx.log(`emulator: auto-stop sweep failed: ${(err as Error)?.message ?? String(err)}`))
      .finally(() => {
        sweeping = false;
      });
  }, Math.min(1000, Math.max(25, Math.floor(ctx.config.autoStopMinuteMs / 10))));
  sweeper.unref();
  return () => clearInterval(sweeper);
}
