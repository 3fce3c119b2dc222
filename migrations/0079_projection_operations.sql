-- Operators' controls of projections (cli projections pause|resume|skip, projections/operations.ts).
-- A paused projection applies nothing until resumed; every runner learns of it by NOTIFY
-- projection_control and checks it in each batch's transaction.
CREATE TABLE projection_pauses (
  projection text PRIMARY KEY,
  paused_by  text NOT NULL,
  reason     text,
  paused_at  timestamptz NOT NULL DEFAULT now()
);

-- Parked events an operator removed from a projection's way, kept for the record: the parked row as
-- it was, with who skipped it, why and when. The skip itself is also an event (ProjectionEventSkipped).
CREATE TABLE projection_skipped_events (
  projection       text NOT NULL,
  event_id         text NOT NULL,
  position_commit  bigint NOT NULL,
  position_prepare bigint NOT NULL,
  stream_name      text NOT NULL,
  stream_revision  bigint NOT NULL,
  tenant_id        text,
  event_type       text NOT NULL,
  error            text NOT NULL,
  attempts         integer NOT NULL,
  parked_at        timestamptz NOT NULL,
  skipped_by       text NOT NULL,
  reason           text NOT NULL,
  skipped_at       timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (projection, event_id)
);
