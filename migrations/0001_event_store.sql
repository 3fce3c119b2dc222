-- The Postgres event store. Events are append-only. A stream's revision is its highest
-- stream_revision; the unique index on (stream_name, stream_revision) is what makes optimistic
-- concurrency hold: of two writers appending at the same revision, the second fails.

CREATE TABLE events (
  global_position bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  -- The writing transaction: readers only read below the oldest running transaction (xmin), ordered by
  -- (transaction_id, global_position), so an event that commits late is never skipped.
  transaction_id  xid8 NOT NULL DEFAULT pg_current_xact_id(),
  -- UUIDv7, made by the appender. Not indexed: nothing looks events up by id, and every index is paid
  -- on the write path of every command.
  event_id        uuid NOT NULL,
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
