import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { freePort } from "../test/product";
import { ClusterError, clusterPort, ensureCluster, stopCluster, type RunningCluster } from "./cluster";
import { probe } from "./embedded";

/**
 * Two checkouts on one machine (docs/configuration.md, `RUNWARDEN_PG_PORT`): each data directory gets its own server, a
 * running server is reused only by the data directory it serves, and a taken port moves the
 * second one to a free port it remembers — never onto the first one's database.
 */

const roots: string[] = [];
const running: RunningCluster[] = [];

function dataRoot(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rw-cluster-"));
  fs.chmodSync(dir, 0o755);
  roots.push(dir);
  return dir;
}

afterAll(async () => {
  for (const c of running) await stopCluster(c.dataDir);
  for (const dir of roots) fs.rmSync(dir, { recursive: true, force: true });
});

describe("the embedded cluster of a data directory", () => {
  it("is reused by its own data directory and by no other", async () => {
    const port = await freePort();
    const a = dataRoot();
    const first = await ensureCluster({ dataRoot: a, port });
    running.push(first);
    expect(first).toMatchObject({ port, startedHere: true });

    const again = await ensureCluster({ dataRoot: a });
    expect(again).toMatchObject({ port, startedHere: false, dataDir: first.dataDir });

    // A second checkout whose remembered port is the first one's (a copied data dir, say).
    const b = dataRoot();
    fs.writeFileSync(path.join(b, "pg.port"), `${port}\n`);
    const logs: string[] = [];
    const second = await ensureCluster({ dataRoot: b, log: (l) => logs.push(l) });
    running.push(second);
    expect(second.startedHere).toBe(true);
    expect(second.port).not.toBe(port);
    expect(second.dataDir).toBe(path.join(b, "pg"));
    expect(logs.join("\n")).toContain(`port ${port} is in use by another data directory's database (${first.dataDir})`);
    expect(fs.readFileSync(path.join(b, "pg.port"), "utf8").trim()).toBe(String(second.port));
    expect(clusterPort({ dataRoot: b })).toBe(second.port);

    // The first one stopping does not touch the second.
    await stopCluster(first.dataDir);
    await expect(probe(second.adminUrl)).resolves.toBeUndefined();
    expect(clusterPort({ dataRoot: a })).toBe(port);
  }, 120_000);

  it("refuses an explicit port another data directory's server holds, in one line naming it", async () => {
    const port = await freePort();
    const owner = await ensureCluster({ dataRoot: dataRoot(), port });
    running.push(owner);
    const other = dataRoot();
    const attempt = ensureCluster({ dataRoot: other, port });
    await expect(attempt).rejects.toBeInstanceOf(ClusterError);
    await expect(attempt).rejects.toThrow(
      `port ${port} (RUNWARDEN_PG_PORT) is in use by another data directory's database (${owner.dataDir}); set RUNWARDEN_PG_PORT to a free port`,
    );
    expect(fs.existsSync(path.join(other, "pg", "PG_VERSION"))).toBe(false);
  }, 120_000);
});
