-- CreateTable
CREATE TABLE "intent_rollups" (
    "instance_id" TEXT NOT NULL,
    "company_id" TEXT NOT NULL,
    "status" "IntentStatus" NOT NULL,
    "n" BIGINT NOT NULL DEFAULT 0,

    CONSTRAINT "intent_rollups_pkey" PRIMARY KEY ("instance_id","company_id","status")
);

-- Kept in the same transaction as every change to `sandbox_creation_intents`: a change is at
-- most two deltas (the row's old and new group), applied in key order so that two transactions
-- moving intents between the same groups in opposite directions lock the rows in one order.
CREATE FUNCTION intent_rollups_apply() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO intent_rollups AS r (instance_id, company_id, status, n)
  SELECT instance_id, company_id, status, sum(delta)
  FROM (
    SELECT OLD.instance_id AS instance_id, OLD.company_id AS company_id, OLD.status AS status, -1 AS delta WHERE TG_OP IN ('UPDATE', 'DELETE')
    UNION ALL
    SELECT NEW.instance_id, NEW.company_id, NEW.status, 1 WHERE TG_OP IN ('INSERT', 'UPDATE')
  ) d
  GROUP BY instance_id, company_id, status
  HAVING sum(delta) <> 0
  ORDER BY instance_id, company_id, status
  ON CONFLICT (instance_id, company_id, status) DO UPDATE SET n = r.n + EXCLUDED.n;
  RETURN NULL;
END
$$;

CREATE TRIGGER intent_rollups_insert_delete AFTER INSERT OR DELETE ON sandbox_creation_intents FOR EACH ROW EXECUTE FUNCTION intent_rollups_apply();
-- Inspections, attempts and back-offs change no counted column and cost nothing here.
CREATE TRIGGER intent_rollups_update AFTER UPDATE ON sandbox_creation_intents FOR EACH ROW
  WHEN (OLD.instance_id IS DISTINCT FROM NEW.instance_id OR OLD.company_id IS DISTINCT FROM NEW.company_id OR OLD.status IS DISTINCT FROM NEW.status)
  EXECUTE FUNCTION intent_rollups_apply();

CREATE FUNCTION intent_rollups_truncate() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM intent_rollups;
  RETURN NULL;
END
$$;
CREATE TRIGGER intent_rollups_truncate AFTER TRUNCATE ON sandbox_creation_intents FOR EACH STATEMENT EXECUTE FUNCTION intent_rollups_truncate();

-- Counted again from the rows (the intents already made; a bulk load with triggers off).
CREATE FUNCTION intent_rollups_rebuild() RETURNS void
LANGUAGE sql AS $$
  DELETE FROM intent_rollups;
  INSERT INTO intent_rollups (instance_id, company_id, status, n)
  SELECT instance_id, company_id, status, count(*) FROM sandbox_creation_intents GROUP BY instance_id, company_id, status;
$$;
SELECT intent_rollups_rebuild();
