import type { Db } from "../db/client";
import type { RunnerReleases } from "../engine";
import { runnerReleases } from "../providers/runner";

/**
 * The runner programs this controller may meet on a sandbox (docs/runner.md, "Versions"): its
 * own runner/releases.json, and every program a controller of this database has shipped, as its
 * `controller_processes` row records it (digest and protocol, written at its boot before it
 * starts any run). The rows are how an older controller knows a *newer* release: in a rolling
 * deploy, a per-turn sandbox the next build started and left (its controller killed) is
 * recovered by an old controller, whose manifest cannot name a program released after it. The
 * window is unchanged: a newer program is admitted when its protocol is one this controller
 * speaks (the same protocol, in practice), refused beyond it (§2.1's staged check).
 *
 * Read at every recovery, not cached: a controller that booted a moment ago may have started
 * the very sandbox being recovered. Where the manifest and a row disagree, the manifest wins.
 */
export async function readKnownRunnerReleases(db: Db, own: RunnerReleases = runnerReleases()): Promise<RunnerReleases> {
  const rows = await db.$queryRaw<{ digest: string; protocol: number }[]>`
    SELECT DISTINCT runner_digest AS digest, runner_protocol AS protocol
    FROM controller_processes
    WHERE runner_digest IS NOT NULL AND runner_protocol IS NOT NULL`;
  const releases: Record<string, number> = {};
  for (const r of rows) releases[r.digest] = r.protocol;
  return { releases: { ...releases, ...own.releases }, speaks: own.speaks };
}
