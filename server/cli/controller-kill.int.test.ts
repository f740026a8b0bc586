import { spawn, type ChildProcess } from "node:child_process";
import os from "node:os";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { addUser } from "../auth/users";
import { ensureInstance, instanceIdOf } from "../db/installation";
import { env } from "../env";
import { currentProcessIdentity, readProcessIdentity } from "../process/identity";
import { inProcessCli } from "../test/cli";
import { startControllerHarness, type ControllerHarness } from "../test/controller";
import { controllerProcesses } from "../test/controller-process";
import { isProcessRunning } from "../test/process";

/**
 * `runwarden controller list` / `controller kill` against a real database and real controller
 * processes (README "A restart."): a controller is found by its `controller_processes` row —
 * this installation's instance, this host, not stopped, recently seen — and signalled only
 * when its process is still that row's (docs/rules.md §2.4, the kernel start time), never by
 * its name. The CLI runs in-process, so its instance id is the one it resolves from this
 * database (RUNWARDEN_INSTANCE_ID, else the `installation` row), as `npm run runwarden` does.
 */

let h: ControllerHarness;
let mine = "";
beforeAll(async () => {
  h = await startControllerHarness();
  mine = await instanceIdOf(h.db.db, env.RUNWARDEN_INSTANCE_ID);
});
afterAll(async () => {
  await h?.close();
});

const procs = controllerProcesses(() => h, {});
const cli = inProcessCli(() => h.db.db);

// The controllers a test leaves behind are SIGKILLed after it (controllerProcesses); their rows
// would look live for a few seconds more, so each test starts with none.
beforeEach(async () => {
  await h.db.db.controllerProcess.updateMany({ where: { stoppedAt: null }, data: { stoppedAt: new Date(), stopReason: "test_end" } });
});

const sleepers: ChildProcess[] = [];
afterEach(() => {
  for (const s of sleepers.splice(0)) s.kill("SIGKILL");
});

/** A live process that is no controller. */
async function sleeper(): Promise<number> {
  const child = spawn("sleep", ["60"], { stdio: "ignore" });
  sleepers.push(child);
  await new Promise((resolve, reject) => child.once("spawn", resolve).once("error", reject));
  return child.pid!;
}

async function bootOf(pid: number, instanceId = mine): Promise<string> {
  return (await h.db.db.controllerProcess.findFirstOrThrow({ where: { pid, instanceId, stoppedAt: null } })).bootId;
}

describe("runwarden controller kill", () => {
  it("--signal KILL kills this instance's controller and leaves another instance's running; then none runs here (exit 1)", async () => {
    const ours = await procs.controller({ RUNWARDEN_INSTANCE_ID: mine });
    const theirs = await procs.controller({ RUNWARDEN_INSTANCE_ID: "inst-other" });
    const boot = await bootOf(ours.pid);

    const list = await cli("controller", "list");
    expect(list.code).toBe(0);
    expect(list.out).toMatch(new RegExp(`^pid ${ours.pid}  boot ${boot}  booted \\S+  last seen \\S+\\n1 controller\\(s\\) of instance ${mine} on this host\\n$`));
    expect(list.out).not.toContain(`pid ${theirs.pid} `);

    const killed = await cli("controller", "kill", "--signal", "KILL");
    expect(killed).toEqual({ code: 0, out: `sent SIGKILL to controller pid ${ours.pid}, boot ${boot}\n`, err: "" });
    expect(await ours.exited).toEqual({ code: null, signal: "SIGKILL" });
    expect(isProcessRunning(theirs.pid)).toBe(true);
    expect(await h.db.db.auditEntry.findFirstOrThrow({ where: { action: "controller.kill", targetId: boot } })).toMatchObject({
      actor: `cli:${os.userInfo().username}`,
      targetType: "controller",
      targetId: boot,
      input: { signal: "SIGKILL" },
      outcome: "ok",
      detail: { pid: ours.pid, instanceId: mine, result: "signalled" },
    });

    // Its row still looks live (not stopped, seen seconds ago); its process is proven gone.
    const again = await cli("controller", "kill", "--signal", "KILL");
    expect(again).toEqual({
      code: 1,
      out: "",
      err: `controller ${boot} (pid ${ours.pid}) not signalled: pid ${ours.pid} has exited (process_exit exited:pid_gone)\nrunwarden controller: no controller of instance ${mine} runs on this host\n`,
    });
    expect(isProcessRunning(theirs.pid)).toBe(true);
  });

  it("a row whose pid now belongs to another process is not signalled, nor a row of another host, a stale or stopped one, another instance's", async () => {
    const ours = await procs.controller({ RUNWARDEN_INSTANCE_ID: mine });
    const boot = await bootOf(ours.pid);
    const other = await sleeper();
    // The controller's own row now names a live process that is not it (as after a pid reuse).
    await h.db.db.controllerProcess.update({ where: { bootId: boot }, data: { pid: other } });

    // Rows with the sleeper's true identity (its kernel start ticks) that are not this
    // installation's live controllers here.
    await ensureInstance(h.db.db, "inst-other");
    const self = currentProcessIdentity();
    const asSleeper = readProcessIdentity({ pid: other });
    const row = (bootId: string, extra: Record<string, unknown> = {}) => ({
      bootId,
      instanceId: mine,
      pid: other,
      startedAt: new Date(asSleeper.startedAt),
      startTicks: asSleeper.startTicks === null ? null : BigInt(asSleeper.startTicks),
      hostname: self.hostname,
      pidSpace: self.pidSpace,
      ...extra,
    });
    await h.db.db.controllerProcess.createMany({
      data: [
        row("row-other-host", { hostname: "elsewhere", pidSpace: "ps-elsewhere" }),
        row("row-other-pid-space", { pidSpace: "ps-another-container" }),
        row("row-stale", { lastSeenAt: new Date(Date.now() - 60_000) }),
        row("row-stopped", { stoppedAt: new Date(), stopReason: "drain" }),
        row("row-other-instance", { instanceId: "inst-other" }),
      ],
    });

    const r = await cli("controller", "kill", "--signal", "KILL");
    expect(r).toEqual({
      code: 1,
      out: "",
      err: `controller ${boot} (pid ${other}) not signalled: pid ${other} now belongs to another process (process_exit exited:pid_recycled)\nrunwarden controller: no controller of instance ${mine} runs on this host\n`,
    });
    expect(isProcessRunning(other)).toBe(true);
    expect(isProcessRunning(ours.pid)).toBe(true);
    expect(await h.db.db.auditEntry.count({ where: { action: "controller.kill", targetId: boot } })).toBe(0);

    // What decides is the row, not the name: a live row of this installation here that the
    // sleeper's own identity matches is signalled (picked by --boot), as a controller would be.
    await h.db.db.controllerProcess.create({ data: row("row-the-sleeper") });
    const picked = await cli("controller", "kill", "--boot", "row-the-sleeper", "--json");
    expect(picked.code).toBe(0);
    expect(JSON.parse(picked.out)).toEqual({ instanceId: mine, signalled: [{ bootId: "row-the-sleeper", pid: other, signal: "SIGTERM", result: "signalled" }] });
    await expect.poll(() => isProcessRunning(other)).toBe(false);
  });

  it("TERM by default: every controller of this instance here drains (exit 0, row stopped by a drain)", async () => {
    const [a, b] = [await procs.controller({ RUNWARDEN_INSTANCE_ID: mine }), await procs.controller({ RUNWARDEN_INSTANCE_ID: mine })];
    const [bootA, bootB] = [await bootOf(a.pid), await bootOf(b.pid)];
    const r = await cli("controller", "kill");
    expect(r.code).toBe(0);
    expect(r.err).toBe("");
    expect(r.out.split("\n").sort()).toEqual(
      ["", `2 controllers of instance ${mine} run on this host: signalling each (--boot ID picks one)`, `sent SIGTERM to controller pid ${a.pid}, boot ${bootA}`, `sent SIGTERM to controller pid ${b.pid}, boot ${bootB}`].sort(),
    );
    expect(await a.exited).toEqual({ code: 0, signal: null });
    expect(await b.exited).toEqual({ code: 0, signal: null });
    for (const bootId of [bootA, bootB]) expect(await h.db.db.controllerProcess.findUniqueOrThrow({ where: { bootId } })).toMatchObject({ stopReason: "drain" });
  });

  it("none here: exit 1 with the instance named; an unknown --boot likewise; `list` says 0", async () => {
    expect(await cli("controller", "kill")).toEqual({ code: 1, out: "", err: `runwarden controller: no controller of instance ${mine} runs on this host\n` });
    expect(await cli("controller", "kill", "--boot", "b-nope")).toEqual({ code: 1, out: "", err: `runwarden controller: no controller of instance ${mine} with boot id b-nope runs on this host\n` });
    expect(await cli("controller", "list")).toEqual({ code: 0, out: `0 controller(s) of instance ${mine} on this host\n`, err: "" });
    const refused = await h.db.db.auditEntry.findMany({ where: { action: "controller.kill", outcome: "refused" }, orderBy: { id: "desc" }, take: 2 });
    expect(refused.map((e) => [e.input, e.detail])).toEqual([
      [{ signal: "TERM", boot: "b-nope" }, { reason: `no controller of instance ${mine} with boot id b-nope runs on this host` }],
      [{ signal: "TERM" }, { reason: `no controller of instance ${mine} runs on this host` }],
    ]);
  });

  it("--as: an operator of every company signals, under their name; an operator of some companies or a board user is refused and audited", async () => {
    const admin = { id: "t", role: "admin" };
    await addUser(h.db.db, { email: "op-all@example.com", role: "operator", companies: ["*"] }, admin, { all: true });
    await addUser(h.db.db, { email: "op-one@example.com", role: "operator", companies: ["co-1"] }, admin, { all: true });
    await addUser(h.db.db, { email: "bo-all@example.com", role: "board", companies: ["*"] }, admin, { all: true });
    const a = await procs.controller({ RUNWARDEN_INSTANCE_ID: mine });
    for (const who of ["op-one@example.com", "bo-all@example.com"]) {
      const r = await cli("controller", "kill", "--as", who);
      expect({ who, code: r.code }).toEqual({ who, code: 1 });
    }
    expect(isProcessRunning(a.pid)).toBe(true);
    const r = await cli("controller", "kill", "--as", "op-all@example.com");
    expect(r.code).toBe(0);
    expect(await a.exited).toEqual({ code: 0, signal: null });
    const entries = await h.db.db.auditEntry.findMany({ where: { action: "controller.kill" }, orderBy: { id: "desc" }, take: 3 });
    expect(entries.map((e) => [e.actor, e.outcome])).toEqual([
      ["op-all@example.com", "ok"],
      [expect.stringMatching(/ as bo-all@example\.com$/), "refused"],
      ["op-one@example.com", "refused"],
    ]);
  });

  it("a bad --signal is exit 2 naming the signals it takes, audited as refused", async () => {
    expect(await cli("controller", "kill", "--signal", "HUP")).toEqual({ code: 2, out: "", err: 'runwarden controller: --signal takes TERM, KILL, INT, not "HUP"\n' });
    expect(await h.db.db.auditEntry.findFirstOrThrow({ where: { action: "controller.kill" }, orderBy: { id: "desc" } })).toMatchObject({ outcome: "refused", input: { signal: "HUP" }, detail: { reason: '--signal takes TERM, KILL, INT, not "HUP"' } });
    expect((await cli("controller", "kill", "--signal", "sigkill", "--boot", "b-nope")).err).toContain("no controller of instance");
  });
});
