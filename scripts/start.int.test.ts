import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { afterAll, describe, expect, inject, it } from "vitest";
import { listMigrations } from "../server/db/migrate";
import { withDatabase } from "../server/db/url";
import { childEnv } from "../server/env";
import { dropDatabasesWithPrefix } from "../server/test/db";
import { portFree } from "./lib/processes";

const adminUrl = inject("adminUrl");
const prefix = `${inject("runPrefix")}_start`;
const tsx = path.resolve("node_modules/tsx/dist/cli.mjs");

interface Exit {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

function run(script: string, env: Record<string, string>, timeoutMs = 60_000): Promise<Exit> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const child = spawn(process.execPath, [tsx, script], { env: childEnv({ DATABASE_URL: undefined, PORT: undefined, ...env }) });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`${script} did not exit within ${timeoutMs} ms; stdout: ${stdout}; stderr: ${stderr}`));
    }, timeoutMs);
    child.on("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, ms: Date.now() - started });
    });
  });
}

afterAll(() => dropDatabasesWithPrefix(adminUrl, prefix));

describe("npm start with a bad DATABASE_URL", () => {
  it("exits non-zero at once with one line naming the host and not the password", async () => {
    const result = await run("scripts/start.ts", { DATABASE_URL: "postgresql://alice:hunter2secret@127.0.0.1:9/runwarden", PORT: "39517" });
    expect(result.code).not.toBe(0);
    expect(result.ms).toBeLessThan(20_000);
    const errorLines = result.stderr.trim().split("\n").filter(Boolean);
    expect(errorLines).toHaveLength(1);
    expect(errorLines[0]).toMatch(/cannot connect to PostgreSQL at 127\.0\.0\.1:9/);
    expect(result.stdout + result.stderr).not.toContain("hunter2secret");
  });

  it("names a malformed variable and exits 2", async () => {
    const result = await run("scripts/start.ts", { DATABASE_URL: "mysql://x@y/z" });
    expect(result.code).toBe(2);
    expect(result.stderr.trim()).toBe("runwarden: invalid environment variable DATABASE_URL: must start with postgres:// or postgresql://");
  });
});

describe("npm start with a configuration that cannot work", () => {
  it("exits 2 before anything runs, naming the wrong variable (a Daytona address without its key too): no database started, no port taken", async () => {
    const dataRoot = fs.mkdtempSync(path.join(os.tmpdir(), "rw-badconf-"));
    try {
      const port = 39000 + Math.floor(Math.random() * 500);
      const result = await run("scripts/start.ts", { RUNWARDEN_DATA_DIR: dataRoot, PORT: String(port), DAYTONA_API_URL: "https://app.daytona.io/api", RUNWARDEN_DRAIN_TIMEOUT_MS: "soon" });
      expect(result.code).toBe(2);
      // The Daytona key is a cross-variable check: it is named once each variable is well formed.
      expect(result.stderr).toContain("runwarden: invalid environment variable RUNWARDEN_DRAIN_TIMEOUT_MS:");
      const fixed = await run("scripts/start.ts", { RUNWARDEN_DATA_DIR: dataRoot, PORT: String(port), DAYTONA_API_URL: "https://app.daytona.io/api" });
      expect(fixed.code).toBe(2);
      expect(fixed.stderr.trim()).toBe("runwarden: invalid environment variable DAYTONA_API_KEY: is required when DAYTONA_API_URL is set (the key of the Daytona organisation the sandboxes are created in)");
      expect(fs.readdirSync(dataRoot)).toEqual([]);
      expect(await portFree(port)).toBe(true);
    } finally {
      fs.rmSync(dataRoot, { recursive: true, force: true });
    }
  });
});

describe("two processes migrating one database at the same moment", () => {
  it("apply the migrations once and neither fails", async () => {
    const name = `${prefix}_twin`;
    const admin = new pg.Client({ connectionString: adminUrl });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${name}`);
    await admin.end();
    const url = withDatabase(adminUrl, name);

    const [a, b] = await Promise.all([run("scripts/migrate.ts", { DATABASE_URL: url }), run("scripts/migrate.ts", { DATABASE_URL: url })]);
    expect([a.code, b.code]).toEqual([0, 0]);
    const applied = [a, b].map((r) => Number(/(\d+) applied/.exec(r.stdout)?.[1] ?? NaN));
    expect(applied.sort()).toEqual([0, listMigrations().length]);

    const check = new pg.Client({ connectionString: url });
    await check.connect();
    const { rows } = await check.query<{ n: string }>(`SELECT count(*) AS n FROM "_prisma_migrations"`);
    await check.end();
    expect(Number(rows[0]?.n)).toBe(listMigrations().length);
  });
});
