import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import pg from "pg";
import { childEnv } from "../server/env";
import { admin } from "./lib/admin";
import { createThrowawayDatabase, type ThrowawayDatabase } from "../server/test/emulator";
import { freePort } from "../server/test/emulator-child";
import { waitUntil } from "../server/test/product";

/**
 * `npm run controller` and `npm run emulator` typed at a terminal and stopped with Ctrl-C. The
 * terminal sends SIGINT to the whole foreground group and npm relays it to its script as well:
 * the part gets it twice, at once, and must take that as one request (server/lib/stop-signals.ts)
 * — a controller that read it as "a second Ctrl-C" exited 130 without draining. `script` is the
 * terminal; stdin is its keyboard.
 */

const root = path.resolve(import.meta.dirname, "..");
let database: ThrowawayDatabase;
let scratch: string;

beforeAll(async () => {
  database = await createThrowawayDatabase(inject("adminUrl"), inject("runPrefix"), "parts");
  scratch = fs.mkdtempSync(path.join(os.tmpdir(), "rw-parts-stop-"));
});

afterAll(async () => {
  if (database) await admin(inject("adminUrl"), `DROP DATABASE IF EXISTS ${pg.escapeIdentifier(`${database.name}_emu`)} WITH (FORCE)`);
  await database?.drop();
  fs.rmSync(scratch, { recursive: true, force: true });
});

/** `npm run -s NAME` in a pseudo-terminal; resolves once `ready` appears in its output. */
async function inTerminal(name: string, env: Record<string, string>, ready: RegExp) {
  const child = spawn("script", ["-qfec", `npm run -s ${name}`, "/dev/null"], {
    cwd: root,
    env: childEnv({ NODE_ENV: undefined, VITEST: undefined, FORCE_COLOR: "0", ...env }),
    stdio: ["pipe", "pipe", "pipe"],
  });
  let out = "";
  child.stdout.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr.on("data", (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  try {
    await waitUntil(async () => ready.test(out) || child.exitCode !== null, 120_000, `${name} ready`);
  } catch (err) {
    child.kill("SIGKILL");
    throw err;
  }
  expect(child.exitCode, out).toBeNull();
  return { ctrlC: () => child.stdin.write("\x03"), output: () => out, exited };
}

describe("a part run on its own, stopped with Ctrl-C in its terminal", () => {
  it("npm run controller drains once, not cut short by npm relaying the same Ctrl-C", async () => {
    const emulatorPort = await freePort();
    const c = await inTerminal(
      "controller",
      {
        DATABASE_URL: database.url,
        // Nothing answers there: the controller boots all the same, its breaker open.
        EMULATOR_URL: `http://127.0.0.1:${emulatorPort}`,
        RUNWARDEN_INSTANCE_ID: "inst-parts",
        RUNWARDEN_CONTROLLER_HOME: path.join(scratch, "home"),
      },
      /controller ready: bootId=/,
    );
    c.ctrlC();
    await c.exited;
    // npm's own exit status after a Ctrl-C is npm's (130); the controller's drain is what is ours.
    expect(c.output()).toContain("drained and stopped");
    expect(c.output()).not.toContain("exiting without finishing the drain");
  }, 180_000);

  it("npm run emulator stops in order", async () => {
    const port = await freePort();
    const e = await inTerminal(
      "emulator",
      { DATABASE_URL: inject("adminUrl"), EMULATOR_DATABASE: `${database.name}_emu`, EMULATOR_PORT: String(port), RUNWARDEN_DATA_DIR: scratch },
      /emulator listening on/,
    );
    e.ctrlC();
    await e.exited;
    expect(e.output()).toContain("emulator: stopping (SIGINT)");
    expect(e.output()).not.toMatch(/Error|EPIPE/);
  }, 180_000);
});
