import pg from "pg";

/**
 * Samples pg_stat_activity every 100 ms until stopped: the peak number of client connections
 * on database `datname`, leaving out the caller's own (`application_name` = `observer`), and
 * the names they carried (each controller names its connections, `runwarden-controller
 * <bootId>`). A backend still in its startup shows no name for a moment: counted in the peak,
 * not named. The pool bench and pool.int.test.ts read a controller's connections with it.
 */
export function sampleConnections(adminUrl: string, datname: string, observer: string) {
  const client = new pg.Client({ connectionString: adminUrl });
  client.on("error", () => {});
  let peak = 0;
  const names = new Set<string>();
  let stopped = false;
  const done = (async () => {
    await client.connect();
    while (!stopped) {
      const { rows } = await client.query<{ name: string; n: number }>(
        // Client backends only: an autovacuum worker on the database has no application name.
        "SELECT application_name AS name, count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND application_name <> $2 AND backend_type = 'client backend' GROUP BY 1",
        [datname, observer],
      );
      peak = Math.max(peak, rows.reduce((sum, r) => sum + r.n, 0));
      for (const r of rows) if (r.name !== "") names.add(r.name);
      await new Promise((r) => setTimeout(r, 100));
    }
    await client.end();
  })();
  let result: Promise<{ peak: number; names: string[] }> | null = null;
  return {
    /** Stops sampling (once, however often it is called) and gives the peak and the names. */
    stop(): Promise<{ peak: number; names: string[] }> {
      stopped = true;
      result ??= done.then(() => ({ peak, names: [...names] }));
      return result;
    },
  };
}
