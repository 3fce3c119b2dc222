-- Events a projection could not apply (dead letters): parked with their error so the projection moves
-- past them instead of stalling every tenant (see projections/parking.ts). Later events of a parked
-- event's stream wait here behind it, so a retry applies each stream's events in order.
CREATE TABLE projection_parked_events (
  projection       text NOT NULL,
  event_id         text NOT NULL,
  position_commit  bigint NOT NULL,
  position_prepare bigint NOT NULL,
  stream_name      text NOT NULL,
  stream_revision  bigint NOT NULL,
  tenant_id        text,
  event_type       text NOT NULL,
  -- The last failure, or which parked event of the same stream it waits behind.
  error            text NOT NULL,
  -- How often it was applied and failed: the batch's attempts, then alone, then once per retry.
  attempts         integer NOT NULL,
  parked_at        timestamptz NOT NULL DEFAULT now(),
  last_attempt_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (projection, event_id)
);
CREATE INDEX projection_parked_events_in_order ON projection_parked_events (projection, position_commit, position_prepare);
