import crypto from "node:crypto";
import pg from "pg";
import type { FaultMatch, FaultRule, FaultSpec } from "./faults";

/**
 * The emulator's persistence: plain `pg` on its own database, its own tables (sandboxes,
 * fault rules), so the emulator survives its own SIGKILL as well as the controller's. A
 * sandbox's files and processes live on the host (sandbox-host.ts).
 */

const SCHEMA = `
CREATE TABLE IF NOT EXISTS emulator_sandbox (
  seq            bigserial UNIQUE,
  id             text PRIMARY KEY,
  name           text NOT NULL,
  labels         jsonb NOT NULL DEFAULT '{}'::jsonb,
  env            jsonb NOT NULL DEFAULT '{}'::jsonb,
  cpu            double precision NOT NULL,
  memory         double precision NOT NULL,
  disk           double precision NOT NULL,
  state          text NOT NULL,
  desired_state  text NOT NULL,
  error_reason   text,
  created_at     timestamptz NOT NULL,
  updated_at     timestamptz NOT NULL,
  -- A late materialisation is stored at once but invisible until then (survives a SIGKILL).
  visible_at     timestamptz NOT NULL,
  destroyed_at   timestamptz,
  -- The runner ingress port on the host (each emulated sandbox has its own).
  ingress_port   integer
);
ALTER TABLE emulator_sandbox ADD COLUMN IF NOT EXISTS ingress_port integer;
-- When the current transitional state (creating, starting, stopping, destroying) ends.
ALTER TABLE emulator_sandbox ADD COLUMN IF NOT EXISTS transition_until timestamptz;
-- Toolbox and lifecycle activity (Daytona's lastActivityAt: list order and auto-stop).
ALTER TABLE emulator_sandbox ADD COLUMN IF NOT EXISTS last_activity_at timestamptz;
-- Minutes without activity before the sandbox stops (0 = never); Daytona's default is 15.
ALTER TABLE emulator_sandbox ADD COLUMN IF NOT EXISTS auto_stop_interval integer NOT NULL DEFAULT 15;
-- Minutes stopped before the sandbox is archived; Daytona's default is 7 days (sandbox.entity.ts).
ALTER TABLE emulator_sandbox ADD COLUMN IF NOT EXISTS auto_archive_interval integer NOT NULL DEFAULT 10080;
-- Minutes stopped before the sandbox is deleted: -1 never (Daytona's default), 0 at stop (sandbox.entity.ts).
ALTER TABLE emulator_sandbox ADD COLUMN IF NOT EXISTS auto_delete_interval integer NOT NULL DEFAULT -1;
-- A transition that ends in the error state with this reason instead of its usual one (the slow_start fault).
ALTER TABLE emulator_sandbox ADD COLUMN IF NOT EXISTS transition_error text;
-- The snapshot named at create (null: the emulator's own image, which has node).
ALTER TABLE emulator_sandbox ADD COLUMN IF NOT EXISTS snapshot text;
CREATE INDEX IF NOT EXISTS emulator_sandbox_name_idx ON emulator_sandbox (name);
CREATE INDEX IF NOT EXISTS emulator_sandbox_transition_idx ON emulator_sandbox (transition_until) WHERE transition_until IS NOT NULL;
CREATE INDEX IF NOT EXISTS emulator_sandbox_labels_idx ON emulator_sandbox USING gin (labels);
CREATE TABLE IF NOT EXISTS emulator_fault (
  seq         bigserial UNIQUE,
  id          text PRIMARY KEY,
  match       jsonb NOT NULL,
  fault       jsonb NOT NULL,
  times       integer,
  used        integer NOT NULL DEFAULT 0,
  created_at  timestamptz NOT NULL DEFAULT now()
);
`;

/**
 * A statement of its own (no transaction) sent again when PostgreSQL aborted it as a deadlock
 * victim: nothing of it was committed. Two settles over the same rows can deadlock: the
 * reclaim bench got a 500 ("deadlock detected") for a GET when every lookup settled every due
 * row (stack from the emulator's stderr, 2026-12-03); lists and the sweeper still do.
 */
async function againOnDeadlock<T>(statement: () => Promise<T>, attempts = 3): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await statement();
    } catch (err) {
      if (i >= attempts || (err as { code?: string }).code !== "40P01") throw err;
    }
  }
}

/**
 * Ends the transitions due at `now` (a parameter) among the rows `scope` selects (all when
 * unset), lazily, so it survives an emulator restart; RETURNING the rows changed.
 */
const settleSql = (now: string, scope = "true") => `UPDATE emulator_sandbox SET
    state = CASE WHEN transition_error IS NOT NULL THEN 'error' ELSE CASE state ${Object.entries(TRANSITIONS).map(([from, to]) => `WHEN '${from}' THEN '${to}'`).join(" ")} ELSE state END END,
    error_reason = COALESCE(transition_error, error_reason),
    transition_error = NULL,
    updated_at = transition_until,
    destroyed_at = CASE WHEN state = 'destroying' THEN transition_until ELSE destroyed_at END,
    transition_until = NULL
  WHERE transition_until IS NOT NULL AND transition_until <= ${now} AND (${scope}) RETURNING *`;

export interface SandboxRow {
  seq: string;
  id: string;
  name: string;
  labels: Record<string, string>;
  env: Record<string, string>;
  cpu: number;
  memory: number;
  disk: number;
  state: string;
  desired_state: string;
  error_reason: string | null;
  created_at: Date;
  updated_at: Date;
  visible_at: Date;
  destroyed_at: Date | null;
  ingress_port: number | null;
  transition_until: Date | null;
  last_activity_at: Date | null;
  auto_stop_interval: number;
  auto_archive_interval: number;
  auto_delete_interval: number;
  transition_error: string | null;
  snapshot: string | null;
}

/** The state a transitional state ends in. */
export const TRANSITIONS: Record<string, string> = {
  creating: "started",
  starting: "started",
  stopping: "stopped",
  destroying: "destroyed",
  // Daytona's archive moves a stopped sandbox's disk to object storage; a start restores it.
  archiving: "archived",
  restoring: "started",
};

export type SortKey = "createdAt" | "updatedAt" | "lastActivityAt" | "name";
const SORT_COLUMNS: Record<SortKey, string> = {
  createdAt: "created_at",
  updatedAt: "updated_at",
  lastActivityAt: "COALESCE(last_activity_at, updated_at)",
  name: "name",
};

export interface ListFilter {
  labels: Record<string, string>;
  states: string[];
  /** Prefix matches, as Daytona's `name` and `id` filters. */
  namePrefix: string | null;
  idPrefix: string | null;
  sort: SortKey;
  order: "asc" | "desc";
  /** Keyset: the last row's sort value and id. */
  after: { sortValue: string; id: string } | null;
  limit: number;
  includeDestroyed: boolean;
}

export type Queryable = pg.Pool | pg.PoolClient;

export class EmulatorStore {
  readonly pool: pg.Pool;
  /** How long a destroyed sandbox stays visible (as `destroyed`) before it is a 404. */
  destroyedRetentionMs: number;

  constructor(databaseUrl: string, options: { destroyedRetentionMs: number }) {
    // Sized for a sweep's lanes (RUNWARDEN_SWEEP_LANES, 16 by default) and a few requests besides.
    // synchronous_commit off: a commit does not wait for its WAL flush (a write per request;
    // on these machines the flush was most of a DELETE's database time). A committed change is
    // still seen at once and survives the emulator's own SIGKILL; only an OS crash of the
    // database host could lose the last few hundred milliseconds, which a stand-in can afford.
    this.pool = new pg.Pool({ connectionString: databaseUrl, max: 24, connectionTimeoutMillis: 10_000, options: "-c synchronous_commit=off" });
    // An idle client's error (a restarted server) must not crash the emulator.
    this.pool.on("error", () => {});
    this.destroyedRetentionMs = options.destroyedRetentionMs;
  }

  async migrate(): Promise<void> {
    const client = await this.pool.connect();
    try {
      // Two emulators starting on one database must not race on CREATE TABLE.
      await client.query("SELECT pg_advisory_lock(hashtext('runwarden_emulator_schema'))");
      try {
        await client.query(SCHEMA);
      } finally {
        await client.query("SELECT pg_advisory_unlock(hashtext('runwarden_emulator_schema'))");
      }
    } finally {
      client.release();
    }
  }

  async close(): Promise<void> {
    await this.pool.end();
  }

  /** SQL predicate for "visible to the API at $now" (param index given). */
  private visible(nowParam: string, retentionParam: string): string {
    return `visible_at <= ${nowParam} AND (destroyed_at IS NULL OR destroyed_at + (${retentionParam} || ' milliseconds')::interval > ${nowParam})`;
  }

  /**
   * By id first, then by name (newest, a live one before a destroyed one), as Daytona's
   * `{idOrName}` does: one query (two, one after the other, made a GET by name cost twice).
   */
  async find(idOrName: string, now: Date, db: Queryable = this.pool, lock = false): Promise<SandboxRow | null> {
    const where = this.visible("$2", "$3");
    const suffix = lock ? "FOR UPDATE" : "";
    const { rows } = await db.query<SandboxRow>(
      `SELECT * FROM emulator_sandbox WHERE (id = $1 OR name = $1) AND ${where}
       ORDER BY (id = $1) DESC, (destroyed_at IS NULL) DESC, seq DESC LIMIT 1 ${suffix}`,
      [idOrName, now, String(this.destroyedRetentionMs)],
    );
    return rows[0] ?? null;
  }

  /**
   * `find` and the fault rules with uses left, in one query: a GET or DELETE while no rule is
   * set (every call of a reclaim sweep) needs nothing else (it took 2 more queries; docs/decisions/0003-cost-at-scale.md).
   */
  async findWithFaults(idOrName: string, now: Date): Promise<{ row: SandboxRow | null; rules: FaultRule[] }> {
    // The rows this lookup can return are settled first, in the same statement: the rows it
    // changed are read as it left them (a statement sees its own CTE's changes only through
    // RETURNING), the others as stored. Only those rows: settling every due row on every
    // lookup made concurrent lookups wait on each other's row locks, and deadlock.
    const { rows } = await againOnDeadlock(() => this.pool.query<SandboxRow & { fault_rules: FaultRow[] | null }>({
      // Named: prepared once per connection, so PostgreSQL plans it once, not on every request.
      name: "emulator_find_with_faults",
      text: `WITH settled AS (${settleSql("$2", "id = $1 OR name = $1")})
       SELECT s.*, (SELECT json_agg(f ORDER BY f.seq) FROM emulator_fault f WHERE f.times IS NULL OR f.used < f.times) AS fault_rules
       FROM (SELECT 1) one LEFT JOIN LATERAL (
         SELECT * FROM (
           SELECT * FROM settled
           UNION ALL
           SELECT * FROM emulator_sandbox e WHERE NOT EXISTS (SELECT 1 FROM settled x WHERE x.id = e.id)
         ) a WHERE (id = $1 OR name = $1) AND ${this.visible("$2", "$3")}
         ORDER BY (id = $1) DESC, (destroyed_at IS NULL) DESC, seq DESC LIMIT 1) s ON true`,
      values: [idOrName, now, String(this.destroyedRetentionMs)],
    }));
    const { fault_rules: rules, ...row } = mustRow(rows[0]);
    // json_agg gives timestamps as text; the rows' own columns keep their types.
    return { row: row.id === null ? null : (row as SandboxRow), rules: (rules ?? []).map((r) => faultRule({ ...r, created_at: new Date(r.created_at) })) };
  }

  /**
   * DELETE of a live sandbox not changing state while no fault rule is set, in one statement:
   * the row `find` would pick, locked, renamed and set destroying (or destroyed). Null when
   * there is nothing such to delete (gone, destroyed, mid-transition, a transition due but not
   * yet settled) or a rule is set: the caller takes the locked path, which settles first.
   */
  async deleteNow(idOrName: string, now: Date, transitionUntil: Date | null): Promise<SandboxRow | null> {
    const { rows } = await this.pool.query<SandboxRow>({
      name: "emulator_delete_now",
      text: `UPDATE emulator_sandbox SET state = $4, desired_state = 'destroyed', updated_at = $2, last_activity_at = $2,
         destroyed_at = CASE WHEN $5::timestamptz IS NULL THEN $2 ELSE destroyed_at END,
         transition_until = $5, name = 'DESTROYED_' || name || '_' || $6
       WHERE id = (SELECT id FROM emulator_sandbox WHERE (id = $1 OR name = $1) AND ${this.visible("$2", "$3")}
                   ORDER BY (id = $1) DESC, (destroyed_at IS NULL) DESC, seq DESC LIMIT 1 FOR UPDATE)
         AND destroyed_at IS NULL AND state NOT IN (${Object.keys(TRANSITIONS).map((t) => `'${t}'`).join(", ")})
         AND NOT EXISTS (SELECT 1 FROM emulator_fault f WHERE f.times IS NULL OR f.used < f.times)
       RETURNING *`,
      values: [idOrName, now, String(this.destroyedRetentionMs), transitionUntil ? "destroying" : "destroyed", transitionUntil, String(now.getTime())],
    });
    return rows[0] ?? null;
  }

  /** One sandbox by id as of `now`: its transition ended first if it is due (only its row is touched). */
  async settledById(id: string, now: Date): Promise<SandboxRow | null> {
    const { rows } = await againOnDeadlock(() =>
      this.pool.query<SandboxRow>(
        `WITH settled AS (${settleSql("$2", "id = $1")})
         SELECT * FROM settled UNION ALL SELECT * FROM emulator_sandbox e WHERE e.id = $1 AND NOT EXISTS (SELECT 1 FROM settled)`,
        [id, now],
      ),
    );
    return rows[0] ?? null;
  }

  async byId(id: string, db: Queryable = this.pool): Promise<SandboxRow | null> {
    const { rows } = await db.query<SandboxRow>("SELECT * FROM emulator_sandbox WHERE id = $1", [id]);
    return rows[0] ?? null;
  }

  /** Is a live (not destroyed) sandbox, visible or still materialising, holding this name? */
  async nameTaken(name: string, db: Queryable): Promise<boolean> {
    const { rows } = await db.query("SELECT 1 FROM emulator_sandbox WHERE name = $1 AND destroyed_at IS NULL LIMIT 1", [name]);
    return rows.length > 0;
  }

  async insert(
    row: {
      id: string;
      name: string;
      labels: Record<string, string>;
      env: Record<string, string>;
      cpu: number;
      memory: number;
      disk: number;
      state: string;
      createdAt: Date;
      visibleAt: Date;
      ingressPort: number;
      /** When `creating` becomes `started` (null: no transition). */
      transitionUntil?: Date | null;
      autoStopInterval?: number;
      autoArchiveInterval?: number;
      autoDeleteInterval?: number;
      lastActivityAt?: Date;
      /** The creation ends in `error` with this reason (the slow_start fault). */
      transitionError?: string | null;
      snapshot?: string | null;
    },
    db: Queryable,
  ): Promise<SandboxRow> {
    const { rows } = await db.query<SandboxRow>(
      `INSERT INTO emulator_sandbox (id, name, labels, env, cpu, memory, disk, state, desired_state, created_at, updated_at, visible_at, ingress_port, transition_until, last_activity_at, auto_stop_interval, auto_archive_interval, transition_error, snapshot, auto_delete_interval)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10, $11, $12, $13, $15, $14, $16, $17, $18, $19) RETURNING *`,
      [
        row.id,
        row.name,
        JSON.stringify(row.labels),
        JSON.stringify(row.env),
        row.cpu,
        row.memory,
        row.disk,
        row.state,
        row.state === "stopped" || row.state === "archived" ? row.state : "started",
        row.createdAt,
        row.visibleAt,
        row.ingressPort,
        row.transitionUntil ?? null,
        row.autoStopInterval ?? 15,
        row.lastActivityAt ?? row.createdAt,
        row.autoArchiveInterval ?? 7 * 24 * 60,
        row.transitionError ?? null,
        row.snapshot ?? null,
        row.autoDeleteInterval ?? -1,
      ],
    );
    return mustRow(rows[0]);
  }

  async list(filter: ListFilter, now: Date): Promise<SandboxRow[]> {
    const params: unknown[] = [now, String(this.destroyedRetentionMs), JSON.stringify(filter.labels)];
    let sql = `SELECT * FROM emulator_sandbox WHERE ${this.visible("$1", "$2")} AND labels @> $3::jsonb`;
    // Destroyed sandboxes are never listed (destroying ones are, as in Daytona).
    if (!filter.includeDestroyed) sql += " AND destroyed_at IS NULL";
    if (filter.states.length) {
      params.push(filter.states);
      sql += ` AND state = ANY($${params.length}::text[])`;
    }
    for (const [column, prefix] of [["name", filter.namePrefix], ["id", filter.idPrefix]] as const) {
      if (prefix === null) continue;
      params.push(prefix);
      sql += ` AND starts_with(${column}, $${params.length})`;
    }
    const column = SORT_COLUMNS[filter.sort];
    const dir = filter.order === "asc" ? "ASC" : "DESC";
    const cast = filter.sort === "name" ? "text" : "timestamptz";
    if (filter.after !== null) {
      params.push(filter.after.sortValue, filter.after.id);
      sql += ` AND (${column}, id) ${filter.order === "asc" ? ">" : "<"} ($${params.length - 1}::${cast}, $${params.length})`;
    }
    params.push(filter.limit);
    sql += ` ORDER BY ${column} ${dir}, id ${dir} LIMIT $${params.length}`;
    const { rows } = await this.pool.query<SandboxRow>(sql, params);
    return rows;
  }

  /** Ends every transition that is due (lazy, so it survives an emulator restart); returns the rows changed. */
  async settle(now: Date): Promise<SandboxRow[]> {
    const { rows } = await againOnDeadlock(() => this.pool.query<SandboxRow>(settleSql("$1"), [now]));
    return rows;
  }

  /** Toolbox or lifecycle activity: pushes the auto-stop deadline back. */
  async touch(id: string, now: Date): Promise<void> {
    await this.pool.query("UPDATE emulator_sandbox SET last_activity_at = GREATEST(COALESCE(last_activity_at, $2), $2) WHERE id = $1", [id, now]);
  }

  /** Stopped sandboxes stopped for longer than their autoArchiveInterval (one minute = `minuteMs`). */
  async archivable(now: Date, minuteMs: number): Promise<SandboxRow[]> {
    const { rows } = await this.pool.query<SandboxRow>(
      `SELECT * FROM emulator_sandbox WHERE state = 'stopped' AND destroyed_at IS NULL AND auto_archive_interval > 0
         AND updated_at + (auto_archive_interval * $2::double precision || ' milliseconds')::interval <= $1`,
      [now, minuteMs],
    );
    return rows;
  }

  /**
   * Stopped sandboxes (desired stopped) whose last activity — the stop — is older than their
   * autoDeleteInterval (one minute = `minuteMs`; -1 never): Daytona's auto-delete-check
   * (sandbox.manager.ts autoDeleteCheck).
   */
  async deletable(now: Date, minuteMs: number): Promise<SandboxRow[]> {
    const { rows } = await this.pool.query<SandboxRow>(
      `SELECT * FROM emulator_sandbox WHERE state = 'stopped' AND desired_state = 'stopped' AND destroyed_at IS NULL AND auto_delete_interval >= 0
         AND COALESCE(last_activity_at, updated_at) + (auto_delete_interval * $2::double precision || ' milliseconds')::interval <= $1`,
      [now, minuteMs],
    );
    return rows;
  }

  /** A state set from outside the lifecycle (the admin API: archived, error, build_failed…), with its error reason. */
  async forceState(id: string, state: string, desired: string, errorReason: string | null, now: Date, transitionUntil: Date | null = null): Promise<SandboxRow> {
    const { rows } = await this.pool.query<SandboxRow>(
      `UPDATE emulator_sandbox SET state = $2, desired_state = $3, error_reason = $4, updated_at = $5, transition_until = $6
       WHERE id = $1 AND destroyed_at IS NULL RETURNING *`,
      [id, state, desired, errorReason, now, transitionUntil],
    );
    return mustRow(rows[0]);
  }

  /** Started sandboxes idle for longer than their autoStopInterval (one minute = `minuteMs`). */
  async idle(now: Date, minuteMs: number): Promise<SandboxRow[]> {
    const { rows } = await this.pool.query<SandboxRow>(
      `SELECT * FROM emulator_sandbox WHERE state = 'started' AND destroyed_at IS NULL AND auto_stop_interval > 0
         AND COALESCE(last_activity_at, updated_at) + (auto_stop_interval * $2::double precision || ' milliseconds')::interval <= $1`,
      [now, minuteMs],
    );
    return rows;
  }

  /** Admin view: every row, including ones still materialising and (optionally) destroyed ones. */
  async all(includeDestroyed: boolean): Promise<SandboxRow[]> {
    const { rows } = await this.pool.query<SandboxRow>(
      `SELECT * FROM emulator_sandbox ${includeDestroyed ? "" : "WHERE destroyed_at IS NULL"} ORDER BY seq`,
    );
    return rows;
  }

  /**
   * A lifecycle change: the new state, desired state, when a transitional state ends, and
   * optionally a new name (delete renames). Lifecycle changes count as activity.
   */
  async setState(
    id: string,
    state: string,
    desired: string,
    now: Date,
    db: Queryable,
    extra: { destroyed?: boolean; transitionUntil?: Date | null; name?: string; transitionError?: string | null } = {},
  ): Promise<SandboxRow> {
    const { rows } = await db.query<SandboxRow>(
      `UPDATE emulator_sandbox SET state = $2, desired_state = $3, updated_at = $4, last_activity_at = $4,
         destroyed_at = CASE WHEN $5::boolean THEN $4 ELSE destroyed_at END,
         transition_until = $6, name = COALESCE($7, name), transition_error = $8
       WHERE id = $1 RETURNING *`,
      [id, state, desired, now, extra.destroyed ?? false, extra.transitionUntil ?? null, extra.name ?? null, extra.transitionError ?? null],
    );
    return mustRow(rows[0]);
  }

  async faults(): Promise<FaultRule[]> {
    const { rows } = await this.pool.query<FaultRow>("SELECT * FROM emulator_fault ORDER BY seq");
    return rows.map(faultRule);
  }

  async addFault(rule: { match: FaultMatch; fault: FaultSpec; times: number | null }): Promise<FaultRule> {
    const id = `fault-${crypto.randomUUID()}`;
    const { rows } = await this.pool.query<{ created_at: Date }>(
      "INSERT INTO emulator_fault (id, match, fault, times) VALUES ($1, $2, $3, $4) RETURNING created_at",
      [id, JSON.stringify(rule.match), JSON.stringify(rule.fault), rule.times],
    );
    return { id, ...rule, used: 0, createdAt: mustRow(rows[0]).created_at.toISOString() };
  }

  /** Takes one use of a rule; false when another call took the last one. */
  async consumeFault(id: string): Promise<boolean> {
    const res = await this.pool.query("UPDATE emulator_fault SET used = used + 1 WHERE id = $1 AND (times IS NULL OR used < times)", [id]);
    return (res.rowCount ?? 0) > 0;
  }

  async deleteFaults(id?: string): Promise<number> {
    const res = id ? await this.pool.query("DELETE FROM emulator_fault WHERE id = $1", [id]) : await this.pool.query("DELETE FROM emulator_fault");
    return res.rowCount ?? 0;
  }

  async reset(): Promise<void> {
    await this.pool.query("TRUNCATE emulator_sandbox, emulator_fault");
  }

  async transaction<T>(fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    try {
      await client.query("BEGIN");
      const out = await fn(client);
      await client.query("COMMIT");
      return out;
    } catch (err) {
      await client.query("ROLLBACK").catch(() => {});
      throw err;
    } finally {
      client.release();
    }
  }
}

type FaultRow = { id: string; match: FaultMatch; fault: FaultSpec; times: number | null; used: number; created_at: Date };

function faultRule(r: FaultRow): FaultRule {
  return { id: r.id, match: r.match, fault: r.fault, times: r.times, used: r.used, createdAt: r.created_at.toISOString() };
}

function mustRow<T>(row: T | undefined): T {
  if (row === undefined) throw new Error("emulator store: expected a row");
  return row;
}
