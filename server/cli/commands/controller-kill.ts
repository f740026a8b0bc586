import type { Command } from "commander";
import { AppError } from "../../errors";
import type { CliIO } from "../io";
import type { ControllerHere } from "../controllers-here";

/** What `--signal` takes: TERM drains (docs/operations.md), INT drains too, KILL is a hard restart. */
export const KILL_SIGNALS = ["TERM", "KILL", "INT"] as const;
type KillSignal = (typeof KILL_SIGNALS)[number];

/**
 * `runwarden controller kill [--signal TERM|KILL|INT] [--boot ID] [--json]`: signals every live
 * controller of this installation on this host (or the one `--boot` names), each found by its
 * row and proven to be that row's process (controllers-here.ts) — never by a process name, so
 * another installation's controllers and a process that took a dead controller's pid are left
 * alone. Each is proven again right before its signal, with nothing awaited in between: only
 * in those microseconds could its pid pass to a new process (Node has no pidfd to close that).
 * Exit 1 when none runs here; 2 on bad usage. Each signal is audited as `controller.kill`, and
 * so is a refusal.
 */
export function registerControllerKill(controller: Command, io: CliIO): void {
  controller
    .command("kill")
    .description("signal this installation's live controllers on this host: TERM (the default) drains them, KILL is a hard kill (the restart demo)")
    .option("--signal <name>", `${KILL_SIGNALS.join(", ")} (default TERM)`, "TERM")
    .option("--boot <id>", "only the controller with this boot id (default: every one on this host)")
    .option("--as <email>", "act for this person: an operator of every company (a controller executes every company's runs), a refusal audited (default: this machine's operator)")
    .option("--json", "print what was signalled as JSON")
    .action(async (opts: { signal: string; boot?: string; as?: string; json?: boolean }) => {
      // Loaded when run: the CLI's entry never loads the database for a command that does not use it.
      const { isStillThatController, notProvenText, withControllersHere } = await import("../controllers-here");
      await withControllersHere(io, async ({ instanceId, live, notProven, db, observer }) => {
        const [{ writeAudit }, { auditedCli, cliActor, machineActor }] = await Promise.all([import("../../audit/write"), import("../actor")]);
        // An operator of every company: the controller it stops executes every company's runs.
        const acting = opts.as === undefined ? { actor: machineActor("operator"), scope: { all: true } } : await cliActor(db, opts.as, "operator", "controller.kill");
        const actor = acting.actor;
        if (!acting.scope.all) {
          const reason = `${actor.id} is an operator of some companies only; a controller executes every company's runs: controller.kill needs an operator of every company (*)`;
          await writeAudit(db, actor, { action: "controller.kill", targetType: "procedure", targetId: "controller.kill", input: { signal: opts.signal, boot: opts.boot }, outcome: "refused", detail: { reason } });
          throw new AppError("FORBIDDEN", reason);
        }
        // A refusal (a bad --signal, none here) is audited too, as every CLI mutation is (docs/access.md).
        await auditedCli(db, actor, "controller.kill", { signal: opts.signal, boot: opts.boot }, async () => {
          const signal: NodeJS.Signals = `SIG${parseSignal(opts.signal)}`;
          for (const c of notProven) if (opts.boot === undefined || c.bootId === opts.boot) io.stderr(`${notProvenText(c)}\n`);
          const chosen = opts.boot === undefined ? live : live.filter((c) => c.bootId === opts.boot);
          if (chosen.length === 0) throw new AppError("NOT_FOUND", `no controller of instance ${instanceId}${opts.boot === undefined ? "" : ` with boot id ${opts.boot}`} runs on this host`);
          if (chosen.length > 1 && !opts.json) io.stdout(`${chosen.length} controllers of instance ${instanceId} run on this host: signalling each (--boot ID picks one)\n`);
          const signalled: Array<{ bootId: string; pid: number; signal: string; result: "signalled" | "gone" }> = [];
          for (const c of chosen) {
            // Proven again with nothing awaited before the signal: earlier signals and audit writes
            // took time, in which the controller may have exited and its pid passed to another process.
            const result = isStillThatController(observer, c) && sendSignal(c, signal) ? "signalled" : "gone";
            signalled.push({ bootId: c.bootId, pid: c.pid, signal, result });
            await writeAudit(db, actor, { action: "controller.kill", targetType: "controller", targetId: c.bootId, input: { signal }, outcome: "ok", detail: { pid: c.pid, hostname: c.hostname, instanceId, result } });
            if (!opts.json) io.stdout(result === "signalled" ? `sent ${signal} to controller pid ${c.pid}, boot ${c.bootId}\n` : `controller pid ${c.pid}, boot ${c.bootId} was gone before the signal: not signalled\n`);
          }
          if (opts.json) io.stdout(`${JSON.stringify({ instanceId, signalled })}\n`);
          if (signalled.every((c) => c.result === "gone")) throw new AppError("NOT_FOUND", `no controller of instance ${instanceId} runs on this host any more`);
        });
      });
    });
}

/** Signals the controller's pid: false when it exited in between (ESRCH); refused when not permitted. */
function sendSignal(c: ControllerHere, signal: NodeJS.Signals): boolean {
  try {
    process.kill(c.pid, signal);
    return true;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ESRCH") return false;
    if (code === "EPERM") throw new AppError("FORBIDDEN", `not permitted to signal pid ${c.pid} (controller ${c.bootId}): run this as the user the controller runs as, or root`);
    throw err;
  }
}

/** `KILL`, `kill` and `SIGKILL` are one signal; anything outside KILL_SIGNALS is refused as bad input (exit 2) naming them. */
export function parseSignal(value: string): KillSignal {
  const name = value.trim().toUpperCase().replace(/^SIG/, "");
  if ((KILL_SIGNALS as readonly string[]).includes(name)) return name as KillSignal;
  throw new AppError("INVALID_INPUT", `--signal takes ${KILL_SIGNALS.join(", ")}, not ${JSON.stringify(value)}`);
}
