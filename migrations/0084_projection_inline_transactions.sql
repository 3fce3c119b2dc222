-- Transactions whose events a projection applied inline, in the appending transaction itself
-- (src/event-store/postgres.ts): its runner skips their events and deletes the row once past them
-- (projections/runner.ts); a rebuild, which replays every event, drops the projection's rows at its swap.
CREATE TABLE projection_inline_transactions (
  projection     text NOT NULL,
  transaction_id bigint NOT NULL,
  PRIMARY KEY (projection, transaction_id)
);
