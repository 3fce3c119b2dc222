-- Tamper evidence (projections/audit-chain/): each employer's events sealed into a hash chain in commit
-- order, and signed checkpoints of its head. Not rebuildable: a chain recomputed from the events as
-- they are now would launder whatever was changed since.
CREATE TABLE audit_chain (
  employer_id text NOT NULL,
  -- 1-based position of the event in its employer's chain.
  seq         bigint NOT NULL,
  event_id    uuid NOT NULL,
  -- Hex SHA-256; prev_hash of seq 1 is 64 zeros.
  prev_hash   text NOT NULL,
  hash        text NOT NULL,
  sealed_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (employer_id, seq)
);
-- The replay prints each event with its own seal, found by event id.
CREATE UNIQUE INDEX audit_chain_by_event ON audit_chain (event_id);

-- Each employer's newest link and the newest seq a checkpoint signed: one row read and written per
-- batch, and what the 10-minute checkpoint job scans (never the whole chain).
CREATE TABLE audit_chain_heads (
  employer_id      text PRIMARY KEY,
  seq              bigint NOT NULL,
  hash             text NOT NULL,
  checkpointed_seq bigint NOT NULL DEFAULT 0
);

-- An Ed25519 signature over the canonical JSON of { employerId, seq, headHash, signedAt }.
CREATE TABLE audit_checkpoints (
  employer_id text NOT NULL,
  seq         bigint NOT NULL,
  head_hash   text NOT NULL,
  signed_at   timestamptz NOT NULL,
  -- Hex SHA-256 of the public key (SPKI DER), so a rotated key's checkpoints stay attributable.
  key_id      text NOT NULL,
  signature   text NOT NULL,
  PRIMARY KEY (employer_id, seq)
);

-- The audit API (GET /api/employer/audit-events): request id, and indexes for newest-first keyset
-- paging by (occurred_at, global_position) alone and under each filter.
ALTER TABLE audit_log ADD COLUMN request_id text;
UPDATE audit_log SET request_id = events.metadata->>'correlationId' FROM events WHERE events.global_position = audit_log.global_position;
DROP INDEX audit_log_by_employer;
DROP INDEX audit_log_by_action;
CREATE INDEX audit_log_by_employer ON audit_log (employer_id, occurred_at DESC, global_position DESC);
-- text_pattern_ops serves both the exact action and a prefix such as `scim.` (LIKE 'scim.%').
CREATE INDEX audit_log_by_action ON audit_log (employer_id, action text_pattern_ops, occurred_at DESC, global_position DESC);
CREATE INDEX audit_log_by_actor ON audit_log (employer_id, actor_id, occurred_at DESC, global_position DESC);
CREATE INDEX audit_log_by_target ON audit_log (employer_id, target_id, occurred_at DESC, global_position DESC);
