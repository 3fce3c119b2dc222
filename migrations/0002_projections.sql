-- Where each projection has got to in the global order (see projections/runner.ts).
CREATE TABLE projection_checkpoints (
  name            text PRIMARY KEY,
  position_commit bigint NOT NULL DEFAULT 0,
  position_prepare bigint NOT NULL DEFAULT 0,
  events_applied  bigint NOT NULL DEFAULT 0,
  updated_at      timestamptz NOT NULL DEFAULT now(),
  rebuilt_at      timestamptz
);
