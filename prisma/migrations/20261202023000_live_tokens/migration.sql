-- "Changed since" tokens for live pages (issue 13): one sequence per topic a page shows,
-- advanced by a statement-level trigger on every statement that changed at least one row.
-- A sequence is not transactional and holds no row lock: concurrent writers never wait on
-- each other here (a counter row UPDATEd by every writer would serialise them). A page polls
-- the sequences' last values (a single-block read each, whatever the tables hold) and
-- refetches its real queries when one of its topics moved. The value moves when the write
-- happens, not when it commits; `live_token()` pairs it with a transaction-id horizon so a
-- change read before it committed is fetched again once it has (server/shared/live.ts).
CREATE SEQUENCE live_runs;
CREATE SEQUENCE live_intents;
CREATE SEQUENCE live_audit;
CREATE SEQUENCE live_waves;

-- TG_ARGV[0] names the topic's sequence. A statement that matched no row (a controller's
-- claim of queued runs when none is queued, a fenced write that lost) moves nothing.
CREATE FUNCTION live_bump() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    IF NOT EXISTS (SELECT FROM live_old) THEN RETURN NULL; END IF;
  ELSIF NOT EXISTS (SELECT FROM live_new) THEN
    RETURN NULL;
  END IF;
  PERFORM nextval(TG_ARGV[0]::regclass);
  RETURN NULL;
END
$$;

DO $$
DECLARE
  t record;
BEGIN
  FOR t IN SELECT * FROM (VALUES
    ('runs', 'live_runs'), ('run_events', 'live_runs'), ('proofs', 'live_runs'), ('recovery_claims', 'live_runs'),
    ('sandbox_creation_intents', 'live_intents'), ('environment_leases', 'live_intents'),
    ('audit_entries', 'live_audit'),
    ('chaos_waves', 'live_waves'), ('chaos_wave_tasks', 'live_waves'), ('chaos_wave_checks', 'live_waves')
  ) v(tbl, seq) LOOP
    EXECUTE format('CREATE TRIGGER live_insert AFTER INSERT ON %I REFERENCING NEW TABLE AS live_new FOR EACH STATEMENT EXECUTE FUNCTION live_bump(%L)', t.tbl, t.seq);
    EXECUTE format('CREATE TRIGGER live_update AFTER UPDATE ON %I REFERENCING NEW TABLE AS live_new FOR EACH STATEMENT EXECUTE FUNCTION live_bump(%L)', t.tbl, t.seq);
    EXECUTE format('CREATE TRIGGER live_delete AFTER DELETE ON %I REFERENCING OLD TABLE AS live_old FOR EACH STATEMENT EXECUTE FUNCTION live_bump(%L)', t.tbl, t.seq);
  END LOOP;
END
$$;

-- One reading (a sequence's first nextval leaves last_value as it was: is_called tells them
-- apart): the reader's snapshot, then the values, then a transaction id of its own.
-- Every writer the values count got its id before its write, so below the reader's id; once
-- a later reading's xmin (the oldest transaction still running) passes `horizon`, all of them
-- have ended. A snapshot bound alone cannot say this: a running writer whose id is at or above
-- the snapshot's xmax appears in no snapshot. `horizon` is null when nothing was running: no
-- transaction in the snapshot and no id handed out between its xmax and the reader's own.
-- The reader's id costs a commit record, written asynchronously (no flush per poll).
CREATE FUNCTION live_token(OUT runs bigint, OUT intents bigint, OUT audit bigint, OUT waves bigint, OUT xmin xid8, OUT horizon xid8)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  snap pg_snapshot := pg_current_snapshot();
  self xid8;
BEGIN
  SELECT CASE WHEN is_called THEN last_value ELSE 0 END INTO runs FROM live_runs;
  SELECT CASE WHEN is_called THEN last_value ELSE 0 END INTO intents FROM live_intents;
  SELECT CASE WHEN is_called THEN last_value ELSE 0 END INTO audit FROM live_audit;
  SELECT CASE WHEN is_called THEN last_value ELSE 0 END INTO waves FROM live_waves;
  PERFORM set_config('synchronous_commit', 'off', true);
  self := pg_current_xact_id();
  xmin := pg_snapshot_xmin(snap);
  horizon := CASE WHEN pg_snapshot_xmin(snap) = pg_snapshot_xmax(snap) AND self = pg_snapshot_xmax(snap) THEN NULL
                  ELSE (self::text::numeric + 1)::text::xid8 END;
END
$$;
