import crypto from "node:crypto";
import type { Db } from "../../db/client";
import { openDatabase } from "../../db/embedded";
import { databaseOf, withDatabase } from "../../db/url";
import type { EmulatorAdminClient } from "../../emulator/admin-client";
import type { Env } from "../../env";
import { evidenceIdentity } from "../../controller/context";
import { json } from "../../controller/records";
import { exitedProcessIdentity } from "../../process/exited";
import { buildLabels, creationName } from "../../providers/labels";
import { submitRun } from "../../runs/submit";
import { markerCommand } from "../markers";
import { WAVE_COMPANY, type WaveContext } from "./context";
import { faultRule } from "./fault-rules";

/**
 * A wave's setup (docs/rules.md §5): the decoys R6 judges, and each task's run submitted with its
 * faults — at the start, or when the wave releases a task it held back (server/waves/step.ts).
 */

export interface Decoy {
  id: string;
  kind: "another_instance" | "another_company" | "another_host";
}

/** R6's subjects: sandboxes that are not provably this instance's to destroy. */
export async function plantDecoys(db: Db, admin: EmulatorAdminClient, instanceId: string): Promise<Decoy[]> {
  const dead = evidenceIdentity(await exitedProcessIdentity());
  const intent = async (creator: object, labels: { instance: string; company: string }): Promise<string> => {
    const op = crypto.randomUUID();
    const name = creationName("rw", op);
    const planted = await admin.plant({ name, labels: buildLabels({ instanceId: labels.instance, companyId: labels.company, operationId: op }) });
    await db.sandboxCreationIntent.create({
      data: {
        id: op,
        instanceId,
        companyId: WAVE_COMPANY,
        runId: `decoy-${op}`,
        creationName: name,
        labels: json({ instance: instanceId, company: WAVE_COMPANY, operation: op }),
        creator: json(creator),
        settleDeadline: new Date(Date.now() + 60_000),
        nextAttemptAt: new Date(Date.now() + 30 * 60_000),
      },
    });
    return planted.id;
  };
  const otherInstance = await admin.plant({ name: `rw-create-decoy-${crypto.randomUUID()}`, labels: buildLabels({ instanceId: `${instanceId}-other`, companyId: WAVE_COMPANY, operationId: "decoy" }) });
  return [
    { id: otherInstance.id, kind: "another_instance" },
    // Our intent, but the sandbox under its name says another company: never destroyed.
    { id: await intent(dead, { instance: instanceId, company: "co-decoy" }), kind: "another_company" },
    // Our intent and labels, but its creator lives in another PID space: never judged exited.
    { id: await intent({ ...dead, bootId: crypto.randomUUID(), pidSpace: "ps-decoy-host" }, { instance: instanceId, company: WAVE_COMPANY }), kind: "another_host" },
  ];
}

/** Submits one planned task's run and sets its run's faults at the provider. */
export async function submitTask(ctx: WaveContext, key: string): Promise<void> {
  const task = ctx.plan.tasks.find((t) => t.key === key);
  if (!task) throw new Error(`no planned task ${key}`);
  const run = await submitRun(
    ctx.db,
    ctx.instanceId,
    {
      companyId: WAVE_COMPANY,
      taskId: `${ctx.id}-${task.key}`,
      agent: task.agent,
      provider: task.provider,
      target: task.target,
      sandboxMode: task.sandboxMode,
      turns: task.turns,
      ...(ctx.markers ? { agentCommand: markerCommand(ctx.markers) } : {}),
    },
    { id: `wave:${ctx.id}`, role: "operator" },
    { waveId: ctx.id },
  );
  ctx.runsByTask.set(task.key, run.id);
  for (const fault of task.faults) {
    const rule = faultRule(fault, run.id);
    if (rule) await ctx.admin.setFault(rule);
  }
}

export async function healthy(url: string): Promise<boolean> {
  try {
    const res = await fetch(`${url}/health`, { signal: AbortSignal.timeout(1000) });
    return res.ok;
  } catch {
    return false;
  }
}

/** The emulator's database on the application's server (as npm start names it). */
export async function emulatorDatabase(appUrl: string, env: Env): Promise<string> {
  const name = env.EMULATOR_DATABASE !== "runwarden_emulator" ? env.EMULATOR_DATABASE : `${databaseOf(appUrl)}_emulator`;
  return (await openDatabase({ env: { ...env, DATABASE_URL: withDatabase(appUrl, name) } })).url;
}

export function isLoopback(url: string): boolean {
  const host = new URL(url).hostname;
  return host === "localhost" || host === "::1" || host === "[::1]" || host.startsWith("127.");
}
