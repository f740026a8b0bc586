-- AlterTable
ALTER TABLE "run_rollups" DROP CONSTRAINT "run_rollups_pkey",
ADD COLUMN     "id" BIGSERIAL NOT NULL,
ADD CONSTRAINT "run_rollups_pkey" PRIMARY KEY ("id");

-- AlterTable
ALTER TABLE "intent_rollups" DROP CONSTRAINT "intent_rollups_pkey",
ADD COLUMN     "id" BIGSERIAL NOT NULL,
ADD CONSTRAINT "intent_rollups_pkey" PRIMARY KEY ("id");

-- CreateIndex
CREATE INDEX "run_rollups_company_id_status_outcome_failure_code_provider_idx" ON "run_rollups"("company_id", "status", "outcome", "failure_code", "provider", "target", "can_retry", "open");

-- CreateIndex
CREATE INDEX "intent_rollups_instance_id_company_id_status_idx" ON "intent_rollups"("instance_id", "company_id", "status");

-- Issue 31: a trigger that updates one row per group in place makes every writer of that group
-- wait for any other open transaction that touched it — across controllers on other hosts, a
-- stalled one's open transaction held the company's rollup rows and stopped every run's status
-- change until PostgreSQL ended its session, then the next of its queued statements took them.
-- The triggers now only insert deltas (inserts never wait on each other); a group's count is
-- the sum of its rows, and the compaction below folds them from time to time.
CREATE OR REPLACE FUNCTION run_rollups_apply() RETURNS trigger
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

  INSERT INTO run_rollups (company_id, status, outcome, failure_code, provider, target, can_retry, open, n, last_at)
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
  HAVING sum(delta) <> 0;
  RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION intent_rollups_apply() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO intent_rollups (instance_id, company_id, status, n)
  SELECT instance_id, company_id, status, sum(delta)
  FROM (
    SELECT OLD.instance_id AS instance_id, OLD.company_id AS company_id, OLD.status AS status, -1 AS delta WHERE TG_OP IN ('UPDATE', 'DELETE')
    UNION ALL
    SELECT NEW.instance_id, NEW.company_id, NEW.status, 1 WHERE TG_OP IN ('INSERT', 'UPDATE')
  ) d
  GROUP BY instance_id, company_id, status
  HAVING sum(delta) <> 0;
  RETURN NULL;
END
$$;

-- Folds each group of several rows into one (none when it sums to zero), in one statement, so a
-- reader's snapshot sees the deltas or their sum, never both. One compaction at a time (others
-- return at once); it deletes only committed rows, so a writer's open delta waits for the next.
-- Returns the rows folded.
CREATE FUNCTION run_rollups_compact() RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
  folded integer;
BEGIN
  IF NOT pg_try_advisory_xact_lock(hashtext('run_rollups_compact')) THEN RETURN 0; END IF;
  WITH many AS (
    SELECT company_id, status, outcome, failure_code, provider, target, can_retry, open FROM run_rollups
    GROUP BY 1, 2, 3, 4, 5, 6, 7, 8 HAVING count(*) > 1
  ), gone AS (
    DELETE FROM run_rollups r USING many m
    WHERE (r.company_id, r.status, r.outcome, r.failure_code, r.provider, r.target, r.can_retry, r.open)
        = (m.company_id, m.status, m.outcome, m.failure_code, m.provider, m.target, m.can_retry, m.open)
    RETURNING r.company_id, r.status, r.outcome, r.failure_code, r.provider, r.target, r.can_retry, r.open, r.n, r.last_at
  ), kept AS (
    INSERT INTO run_rollups (company_id, status, outcome, failure_code, provider, target, can_retry, open, n, last_at)
    SELECT company_id, status, outcome, failure_code, provider, target, can_retry, open, sum(n), max(last_at)
    FROM gone GROUP BY 1, 2, 3, 4, 5, 6, 7, 8 HAVING sum(n) <> 0
    RETURNING 1
  )
  SELECT (SELECT count(*) FROM gone) INTO folded;
  RETURN folded;
END
$$;

CREATE FUNCTION intent_rollups_compact() RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
  folded integer;
BEGIN
  IF NOT pg_try_advisory_xact_lock(hashtext('intent_rollups_compact')) THEN RETURN 0; END IF;
  WITH many AS (
    SELECT instance_id, company_id, status FROM intent_rollups GROUP BY 1, 2, 3 HAVING count(*) > 1
  ), gone AS (
    DELETE FROM intent_rollups r USING many m
    WHERE (r.instance_id, r.company_id, r.status) = (m.instance_id, m.company_id, m.status)
    RETURNING r.instance_id, r.company_id, r.status, r.n
  ), kept AS (
    INSERT INTO intent_rollups (instance_id, company_id, status, n)
    SELECT instance_id, company_id, status, sum(n) FROM gone GROUP BY 1, 2, 3 HAVING sum(n) <> 0
    RETURNING 1
  )
  SELECT (SELECT count(*) FROM gone) INTO folded;
  RETURN folded;
END
$$;
