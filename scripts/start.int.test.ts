import { spawn } from "node:child_process";
import path from "node:path";
import pg from "pg";
import { afterAll, describe, expect, inject, it } from "vitest";
import { listMigrations } from "../server/db/migrate";
import { withDatabase } from "../server/db/url";
import { childEnv } from "../server/env";
import { dropDatabasesWithPrefix } from "../server/test/db";

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
