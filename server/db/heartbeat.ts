import pg from "pg";

/** Writes one controller's heartbeat on a connection of its own. */
export interface HeartbeatWriter {
  beat(): Promise<void>;
  close(): Promise<void>;
}

/**
 * A controller's heartbeat outside its pool (docs/operations.md, "Connections"): with every pooled connection busy
 * (hundreds of runs finishing at once, or all of them waiting on a lock), a heartbeat queued
 * behind them went unwritten past the silence window and another host took every run of a
 * healthy controller over. One connection, opened again after an error; the statement is
 * bounded, so a beat that cannot land fails (and is logged) instead of piling up.
 */
export function createHeartbeatWriter(url: string, p: { bootId: string; applicationName?: string; timeoutMs?: number }): HeartbeatWriter {
  let client: pg.Client | null = null;
  const timeoutMs = p.timeoutMs ?? 5_000;
  const connected = async (): Promise<pg.Client> => {
    if (client) return client;
    const c = new pg.Client({
      connectionString: url,
      connectionTimeoutMillis: timeoutMs,
      statement_timeout: timeoutMs,
      ...(p.applicationName ? { application_name: p.applicationName } : {}),
    });
    c.on("error", () => {
      if (client === c) client = null;
    });
    await c.connect();
    client = c;
    return c;
  };
  return {
    async beat() {
      const c = await connected();
      try {
        await c.query("UPDATE controller_processes SET last_seen_at = now() WHERE boot_id = $1", [p.bootId]);
      } catch (err) {
        if (client === c) client = null;
        await c.end().catch(() => {});
        throw err;
      }
    },
    async close() {
      const c = client;
      client = null;
      await c?.end().catch(() => {});
    },
  };
}
