import type { Command } from "commander";
import type { CliIO } from "../io";
import { registerControllerKill } from "./controller-kill";

/**
 * `runwarden controller list [--json]` and `runwarden controller kill …`: the live controllers
 * of this installation (its instance id: RUNWARDEN_INSTANCE_ID, else the database's) on this
 * host, each proven by its `controller_processes` row and its process (docs/rules.md §2.4).
 */
export function registerController(program: Command, io: CliIO): void {
  const controller = program.command("controller").description("this installation's controllers on this host: list them, or signal them (a drain, or a hard kill for the restart demo)");
  controller
    .command("list")
    .description("the live controllers of this installation on this host (pid, boot id, last heartbeat)")
    .option("--json", "print them as JSON")
    .action(async (opts: { json?: boolean }) => {
      // Loaded when run: the CLI's entry never loads the database for a command that does not use it.
      const { notProvenText, withControllersHere } = await import("../controllers-here");
      await withControllersHere(io, async ({ instanceId, live, notProven }) => {
        if (opts.json) {
          const controllers = live.map((c) => ({ bootId: c.bootId, pid: c.pid, hostname: c.hostname, bootedAt: c.bootedAt, lastSeenAt: c.lastSeenAt }));
          io.stdout(`${JSON.stringify({ instanceId, controllers, notProven })}\n`);
          return;
        }
        for (const c of live) io.stdout(`pid ${c.pid}  boot ${c.bootId}  booted ${c.bootedAt.toISOString()}  last seen ${c.lastSeenAt.toISOString()}\n`);
        for (const c of notProven) io.stderr(`${notProvenText(c)}\n`);
        io.stdout(`${live.length} controller(s) of instance ${instanceId} on this host\n`);
      });
    });
  registerControllerKill(controller, io);
}
