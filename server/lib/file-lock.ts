import fsp from "node:fs/promises";

/**
 * A lock file holding its owner's pid, for work that two processes on one machine must
 * not do at once (initialising the embedded database, building the dashboard). A lock
 * whose owner died is taken over.
 */
export async function acquireFileLock(lockPath: string, timeoutMs = 60_000): Promise<() => Promise<void>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const fh = await fsp.open(lockPath, "wx");
      await fh.writeFile(String(process.pid));
      await fh.close();
      return async () => {
        await fsp.rm(lockPath, { force: true });
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
      const owner = Number.parseInt(await fsp.readFile(lockPath, "utf8").catch(() => ""), 10);
      if (!Number.isFinite(owner) || !pidAlive(owner)) {
        await fsp.rm(lockPath, { force: true });
        continue;
      }
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${lockPath} held by pid ${owner}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}
