import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { ENV_VARIABLES, readEnv } from "./env";

const root = path.join(import.meta.dirname, "..");

/** The variables the table of docs/configuration.md names: every backquoted NAME in a row's first cell. */
function documentedVariables(): string[] {
  const doc = fs.readFileSync(path.join(root, "docs/configuration.md"), "utf8");
  return doc
    .split("\n")
    .filter((line) => line.startsWith("| `"))
    .flatMap((line) => [...(line.slice(2).split(" | ")[0] ?? "").matchAll(/`([A-Z][A-Z0-9_]*)`/g)].map((m) => m[1] ?? ""));
}

/** What next.config.ts reads itself (it cannot import server/env.ts: docs/configuration.md says why). */
function nextConfigVariables(): string[] {
  const config = fs.readFileSync(path.join(root, "next.config.ts"), "utf8");
  return [...config.matchAll(/process\.env\.([A-Z][A-Z0-9_]*)/g)].map((m) => m[1] ?? "");
}

describe("docs/configuration.md", () => {
  it("lists exactly the variables server/env.ts reads, and those next.config.ts reads itself", () => {
    const documented = documentedVariables();
    const read = [...ENV_VARIABLES, ...nextConfigVariables()];
    expect(read.length).toBeGreaterThan(60);
    expect({ undocumented: read.filter((v) => !documented.includes(v)), notRead: documented.filter((v) => !read.includes(v)) }).toEqual({ undocumented: [], notRead: [] });
    expect(documented.filter((v, i) => documented.indexOf(v) !== i), "documented twice").toEqual([]);
  });
});

describe("readEnv", () => {
  it("gives the documented defaults on an empty environment", () => {
    const env = readEnv({});
    expect(env.PORT).toBe(3000);
    expect(env.DATABASE_URL).toBeUndefined();
    expect(env.RUNWARDEN_DATA_DIR).toBe(".data");
    expect(env.RUNWARDEN_PG_PORT).toBeUndefined();
    expect(env.RUNWARDEN_CONTROLLER_HOME).toBe(".data/controller");
  });

  it("keeps the controller's home under the data dir unless it is set", () => {
    expect(readEnv({ RUNWARDEN_DATA_DIR: "/tmp/x" }).RUNWARDEN_CONTROLLER_HOME).toBe("/tmp/x/controller");
    expect(readEnv({ RUNWARDEN_DATA_DIR: "/tmp/x", RUNWARDEN_CONTROLLER_HOME: "/srv/c" }).RUNWARDEN_CONTROLLER_HOME).toBe("/srv/c");
  });

  it("reads PORT as a number and treats empty strings as unset", () => {
    expect(readEnv({ PORT: "3100", DATABASE_URL: "" }).PORT).toBe(3100);
    expect(readEnv({ DATABASE_URL: "" }).DATABASE_URL).toBeUndefined();
  });

  it("refuses an alert signing secret the signer cannot use, naming it, and takes one it can", () => {
    expect(() => readEnv({ RUNWARDEN_ALERT_WEBHOOK_SECRET: "whsec_not base64!" })).toThrow(/RUNWARDEN_ALERT_WEBHOOK_SECRET: not a signing secret the alerts can use/);
    expect(() => readEnv({ RUNWARDEN_ALERT_WEBHOOK_SECRET: "whsec_not-base64-at-all" })).toThrow(/RUNWARDEN_ALERT_WEBHOOK_SECRET: not a signing secret/);
    expect(readEnv({ RUNWARDEN_ALERT_WEBHOOK_SECRET: "whsec_YWJjZGVmZ2hpams=" }).RUNWARDEN_ALERT_WEBHOOK_SECRET).toBe("whsec_YWJjZGVmZ2hpams=");
    expect(readEnv({ RUNWARDEN_ALERT_WEBHOOK_SECRET: "any pasted text, long" }).RUNWARDEN_ALERT_WEBHOOK_SECRET).toBe("any pasted text, long");
    expect(() => readEnv({ RUNWARDEN_ALERT_WEBHOOK_SECRET: "short" })).toThrow(/RUNWARDEN_ALERT_WEBHOOK_SECRET: at least 16 characters/);
  });

  it("reads the alert allow-list as normalised ranges, and refuses a wrong entry naming the variable and the entry", () => {
    expect(readEnv({}).RUNWARDEN_ALERT_ALLOW_NETWORKS).toEqual([]);
    expect(readEnv({ RUNWARDEN_ALERT_ALLOW_NETWORKS: "10.0.0.0/8, 192.168.1.20,fd00::/8" }).RUNWARDEN_ALERT_ALLOW_NETWORKS).toEqual(["10.0.0.0/8", "192.168.1.20/32", "fd00::/8"]);
    expect(() => readEnv({ RUNWARDEN_ALERT_ALLOW_NETWORKS: "10.0.0.0/8,10.0.0.0/33" })).toThrow(/invalid environment variable RUNWARDEN_ALERT_ALLOW_NETWORKS: "10\.0\.0\.0\/33" is not an address or a range/);
    expect(() => readEnv({ RUNWARDEN_ALERT_ALLOW_NETWORKS: "intranet" })).toThrow(/RUNWARDEN_ALERT_ALLOW_NETWORKS: "intranet" is not an address or a range/);
  });

  it("names every wrong variable at once, not one per start", () => {
    expect(() => readEnv({ PORT: "seventy", RUNWARDEN_DRAIN_TIMEOUT_MS: "soon" })).toThrow(/invalid environment variables:\n {2}PORT: .*\n {2}RUNWARDEN_DRAIN_TIMEOUT_MS: /);
  });

  it("refuses a Daytona address without its key when the configuration is read, not when a controller first calls it", () => {
    expect(() => readEnv({ DAYTONA_API_URL: "https://app.daytona.io/api" })).toThrow(/invalid environment variable DAYTONA_API_KEY: is required when DAYTONA_API_URL is set/);
    expect(readEnv({ DAYTONA_API_URL: "https://app.daytona.io/api", DAYTONA_API_KEY: "dtn_x" }).DAYTONA_API_KEY).toBe("dtn_x");
  });

  it("names the variable that is wrong", () => {
    expect(() => readEnv({ DATABASE_URL: "mysql://x" })).toThrow(/DATABASE_URL: must start with postgres/);
    expect(() => readEnv({ PORT: "seventy" })).toThrow(/PORT/);
    expect(() => readEnv({ PORT: "70000" })).toThrow(/PORT/);
  });

  it("refuses an intent wait shorter than the create timeout, naming both (a live creator's sandbox would be reclaimed)", () => {
    expect(() => readEnv({ RUNWARDEN_INTENT_WAIT_MS: "10000", RUNWARDEN_CREATE_TIMEOUT_MS: "30000" })).toThrow(
      /RUNWARDEN_INTENT_WAIT_MS: 10000 ms is shorter than RUNWARDEN_CREATE_TIMEOUT_MS \(30000 ms\)/,
    );
    expect(readEnv({ RUNWARDEN_INTENT_WAIT_MS: "30000", RUNWARDEN_CREATE_TIMEOUT_MS: "30000" }).RUNWARDEN_INTENT_WAIT_MS).toBe(30000);
  });

  it("keeps the settle deadline at least the create timeout plus a margin: derived by default, refused when set below", () => {
    const long = readEnv({ RUNWARDEN_CREATE_TIMEOUT_MS: "180000" });
    expect(long.RUNWARDEN_SETTLE_MS).toBeGreaterThan(180_000);
    expect(readEnv({}).RUNWARDEN_SETTLE_MS).toBeGreaterThan(readEnv({}).RUNWARDEN_CREATE_TIMEOUT_MS);
    expect(() => readEnv({ RUNWARDEN_SETTLE_MS: "120000", RUNWARDEN_CREATE_TIMEOUT_MS: "180000" })).toThrow(/RUNWARDEN_SETTLE_MS: .*create timeout/);
  });

  it("stuck runs and the sandbox's idle policy: derived defaults; an auto-delete that would lose a suspended run's sandbox is refused", () => {
    const e = readEnv({});
    expect({ age: e.RUNWARDEN_STUCK_MAX_AGE_MS, turn: e.RUNWARDEN_STUCK_MAX_TURN_MS, stop: e.RUNWARDEN_SANDBOX_AUTO_STOP_MINUTES, del: e.RUNWARDEN_SANDBOX_AUTO_DELETE_MINUTES }).toEqual({ age: 12 * 3600_000, turn: 32 * 60_000, stop: undefined, del: 1440 });
    expect(readEnv({ RUNWARDEN_TURN_TIMEOUT_MS: "60000" }).RUNWARDEN_STUCK_MAX_TURN_MS).toBe(180_000);
    expect(readEnv({ RUNWARDEN_SANDBOX_AUTO_DELETE_MINUTES: "-1" }).RUNWARDEN_SANDBOX_AUTO_DELETE_MINUTES).toBe(-1);
    expect(() => readEnv({ RUNWARDEN_SANDBOX_AUTO_DELETE_MINUTES: "0" })).toThrow(/RUNWARDEN_SANDBOX_AUTO_DELETE_MINUTES: must be -1 \(never\) or 60/);
    expect(() => readEnv({ RUNWARDEN_SANDBOX_AUTO_STOP_MINUTES: "0" })).toThrow(/RUNWARDEN_SANDBOX_AUTO_STOP_MINUTES/);
  });
});
