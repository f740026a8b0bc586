-- CreateTable
CREATE TABLE "run_rollups" (
    "company_id" TEXT NOT NULL,
    "status" "RunStatus" NOT NULL,
    "outcome" TEXT NOT NULL,
    "failure_code" TEXT NOT NULL,
    "provider" TEXT NOT NULL,
    "target" "ExecutionTarget" NOT NULL,
    "can_retry" BOOLEAN NOT NULL,
    "open" BOOLEAN NOT NULL,
    "n" BIGINT NOT NULL DEFAULT 0,
    "last_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "run_rollups_pkey" PRIMARY KEY ("company_id","status","outcome","failure_code","provider","target","can_retry","open")
);

-- Kept in the same transaction as every change to `runs` (issue 13). Each change becomes at
-- most four deltas (the row's old and new group; a predecessor whose Retry appeared or went
-- away); they are summed per group and applied in key order, so two transactions moving runs
-- between the same groups in opposite directions lock the rows in one order: no deadlock.
CREATE FUNCTION run_rollups_open(run_id uuid, status "RunStatus") RETURNS boolean
LANGUAGE sql STABLE AS $$
  SELECT status = 'failed' AND NOT EXISTS (SELECT 1 FROM runs s WHERE s.previous_run_id = run_id)
$$;

CREATE FUNCTION run_rollups_apply() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  gained uuid := NULL;
  lost uuid := NULL;
BEGIN
  IF TG_OP = 'INSERT' THEN
    gained := NEW.previous_run_id;
  ELSIF TG_OP = 'DELETE' THEN
    lost := OLD.previous_run_id;
  ELSIF OLD.previous_run_id IS DISTINCT FROM NEW.previous_run_id THEN
    gained := NEW.previous_run_id;
    lost := OLD.previous_run_id;
  END IF;

  INSERT INTO run_rollups AS r (company_id, status, outcome, failure_code, provider, target, can_retry, open, n, last_at)
  SELECT company_id, status, outcome, failure_code, provider, target, can_retry, open, sum(delta), max(at)
  FROM (
    SELECT OLD.company_id AS company_id, OLD.status AS status, coalesce(OLD.outcome::text, '') AS outcome, coalesce(OLD.failure_code, '') AS failure_code,
           OLD.provider AS provider, OLD.target AS target, OLD.can_retry AS can_retry,
           -- A deleted row's successor check reads the table without it; its open flag is what it was.
           OLD.status = 'failed' AND NOT EXISTS (SELECT 1 FROM runs s WHERE s.previous_run_id = OLD.id AND s.id <> OLD.id) AS open,
           -1 AS delta, OLD.created_at AS at
    WHERE TG_OP IN ('UPDATE', 'DELETE')
    UNION ALL
    SELECT NEW.company_id, NEW.status, coalesce(NEW.outcome::text, ''), coalesce(NEW.failure_code, ''), NEW.provider, NEW.target, NEW.can_retry,
           run_rollups_open(NEW.id, NEW.status), 1, NEW.created_at
    WHERE TG_OP IN ('INSERT', 'UPDATE')
    -- A predecessor that just got its Retry: it leaves the open group.
    UNION ALL
    SELECT p.company_id, p.status, coalesce(p.outcome::text, ''), coalesce(p.failure_code, ''), p.provider, p.target, p.can_retry, o.open, o.delta, p.created_at
    FROM runs p CROSS JOIN (VALUES (true, -1), (false, 1)) o(open, delta)
    WHERE p.id = gained AND p.status = 'failed'
    -- A predecessor whose Retry went away: it is open again.
    UNION ALL
    SELECT p.company_id, p.status, coalesce(p.outcome::text, ''), coalesce(p.failure_code, ''), p.provider, p.target, p.can_retry, o.open, o.delta, p.created_at
    FROM runs p CROSS JOIN (VALUES (false, -1), (true, 1)) o(open, delta)
    WHERE p.id = lost AND p.status = 'failed'
  ) d
  GROUP BY company_id, status, outcome, failure_code, provider, target, can_retry, open
  HAVING sum(delta) <> 0
  ORDER BY company_id, status, outcome, failure_code, provider, target, can_retry, open
  ON CONFLICT (company_id, status, outcome, failure_code, provider, target, can_retry, open)
  DO UPDATE SET n = r.n + EXCLUDED.n, last_at = GREATEST(r.last_at, EXCLUDED.last_at);
  RETURN NULL;
END
$$;

CREATE TRIGGER run_rollups_insert_delete AFTER INSERT OR DELETE ON runs FOR EACH ROW EXECUTE FUNCTION run_rollups_apply();
-- Most updates (heartbeats, turns, checkpoints) change no grouped column and cost nothing here.
CREATE TRIGGER run_rollups_update AFTER UPDATE ON runs FOR EACH ROW
  WHEN (OLD.company_id IS DISTINCT FROM NEW.company_id OR OLD.status IS DISTINCT FROM NEW.status OR OLD.outcome IS DISTINCT FROM NEW.outcome
     OR OLD.failure_code IS DISTINCT FROM NEW.failure_code OR OLD.provider IS DISTINCT FROM NEW.provider OR OLD.target IS DISTINCT FROM NEW.target
     OR OLD.can_retry IS DISTINCT FROM NEW.can_retry OR OLD.previous_run_id IS DISTINCT FROM NEW.previous_run_id)
  EXECUTE FUNCTION run_rollups_apply();

-- Counts from scratch: after a bulk load with triggers off, and once here for existing runs.
CREATE FUNCTION run_rollups_rebuild() RETURNS void
LANGUAGE sql AS $$
  DELETE FROM run_rollups;
  INSERT INTO run_rollups (company_id, status, outcome, failure_code, provider, target, can_retry, open, n, last_at)
  SELECT r.company_id, r.status, coalesce(r.outcome::text, ''), coalesce(r.failure_code, ''), r.provider, r.target, r.can_retry,
         r.status = 'failed' AND s.id IS NULL, count(*), max(r.created_at)
  FROM runs r LEFT JOIN runs s ON s.previous_run_id = r.id
  GROUP BY 1, 2, 3, 4, 5, 6, 7, 8;
$$;

CREATE FUNCTION run_rollups_truncate() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM run_rollups;
  RETURN NULL;
END
$$;
CREATE TRIGGER run_rollups_truncate AFTER TRUNCATE ON runs FOR EACH STATEMENT EXECUTE FUNCTION run_rollups_truncate();

SELECT run_rollups_rebuild();
