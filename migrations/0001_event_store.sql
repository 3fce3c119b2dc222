-- The Postgres event store. Events are append-only. A stream's revision is its highest
-- stream_revision; the unique index on (stream_name, stream_revision) is what makes optimistic
-- concurrency hold: of two writers appending at the same revision, the second fails.

CREATE TABLE events (
  global_position bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  -- The writing transaction: readers only read below the oldest running transaction (xmin), ordered by
  -- (transaction_id, global_position), so an event that commits late is never skipped.
  transaction_id  xid8 NOT NULL DEFAULT pg_current_xact_id(),
  event_id        uuid NOT NULL UNIQUE,
  stream_name     text NOT NULL,
  stream_revision bigint NOT NULL,
  tenant_id       text,
  type            text NOT NULL,
  data            jsonb NOT NULL,
  metadata        jsonb NOT NULL,
  recorded_at     timestamptz NOT NULL DEFAULT clock_timestamp(),
  CONSTRAINT events_stream_revision_unique UNIQUE (stream_name, stream_revision)
);
CREATE INDEX events_by_commit ON events (transaction_id, global_position);
CREATE INDEX events_by_tenant_commit ON events (tenant_id, transaction_id, global_position);

CREATE FUNCTION events_are_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'events are append-only: % is not allowed', TG_OP USING ERRCODE = 'insufficient_privilege';
END $$;
CREATE TRIGGER events_no_update_or_delete BEFORE UPDATE OR DELETE ON events
  FOR EACH ROW EXECUTE FUNCTION events_are_append_only();
CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON events
  FOR EACH STATEMENT EXECUTE FUNCTION events_are_append_only();

-- Appends events to one stream in one round trip. expected_revision: -1 = any, -2 = the stream must
-- not exist, n >= 0 = the stream's last revision must be n. A mismatch raises SQLSTATE EV001; a
-- concurrent writer that got there first makes the insert fail on events_stream_revision_unique.
CREATE FUNCTION append_to_stream(
  p_stream_name text,
  p_tenant_id text,
  p_expected_revision bigint,
  p_event_ids uuid[],
  p_types text[],
  p_data jsonb[],
  p_metadata jsonb
) RETURNS TABLE (next_revision bigint, last_position bigint, transaction_id text)
LANGUAGE plpgsql AS $$
DECLARE
  current_revision bigint;
BEGIN
  SELECT max(e.stream_revision) INTO current_revision FROM events e WHERE e.stream_name = p_stream_name;
  IF (p_expected_revision = -2 AND current_revision IS NOT NULL)
     OR (p_expected_revision >= 0 AND current_revision IS DISTINCT FROM p_expected_revision) THEN
    RAISE EXCEPTION 'wrong expected revision % for stream %', p_expected_revision, p_stream_name USING ERRCODE = 'EV001';
  END IF;
  current_revision := coalesce(current_revision, -1);

  RETURN QUERY
  INSERT INTO events (event_id, stream_name, stream_revision, tenant_id, type, data, metadata)
  SELECT e.event_id, p_stream_name, current_revision + e.ordinality, p_tenant_id, e.type, e.data, p_metadata
    FROM unnest(p_event_ids, p_types, p_data) WITH ORDINALITY AS e(event_id, type, data, ordinality)
  ORDER BY e.ordinality
  RETURNING current_revision + cardinality(p_types), events.global_position, events.transaction_id::text;
END $$;
