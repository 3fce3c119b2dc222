-- A projection rebuild under way (projections/rebuild.ts): how far its side tables in `schema_name`
-- have got, moved by every batch in the batch's own transaction, so a rebuild that stopped resumes
-- there. The swap deletes the row. `owner` and `updated_at` tell an operator who runs it and whether it
-- still moves; that it runs at all is an advisory lock its process holds.
CREATE TABLE projection_rebuilds (
  projection       text PRIMARY KEY,
  schema_name      text NOT NULL,
  position_commit  bigint NOT NULL DEFAULT 0,
  position_prepare bigint NOT NULL DEFAULT 0,
  events_applied   bigint NOT NULL DEFAULT 0,
  owner            text NOT NULL,
  started_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now()
);
