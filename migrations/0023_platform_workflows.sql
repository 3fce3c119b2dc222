-- Read model `workflows` (projections/workflows/): platform service tokens, and per employer the
-- authorization requests, tapering proposals, invoices and simulations. Primary keys are (employer,
-- id) where a row belongs to an employer: every query names the caller's employer.

-- Platform service tokens (system streams): only the SHA-256 of the token, never the token.
CREATE TABLE platform_tokens (
  id          text PRIMARY KEY,
  name        text NOT NULL,
  families    text[] NOT NULL,
  token_hash  text NOT NULL UNIQUE,
  created_at  timestamptz NOT NULL,
  revoked_at  timestamptz
);

CREATE TABLE authorizations (
  employer_id   text NOT NULL,
  id            text NOT NULL,
  patient_id    text NOT NULL,
  treatment     text NOT NULL,
  justification text NOT NULL,
  requested_at  timestamptz NOT NULL,
  status        text NOT NULL,
  decision_note text,
  reviewed_by   text,
  reviewed_at   timestamptz,
  created_at    timestamptz NOT NULL,
  PRIMARY KEY (employer_id, id)
);
-- Lists page newest first, optionally by status.
CREATE INDEX authorizations_by_time ON authorizations (employer_id, created_at DESC, id DESC);
CREATE INDEX authorizations_by_status ON authorizations (employer_id, status, created_at DESC, id DESC);

CREATE TABLE tapering_proposals (
  employer_id text NOT NULL,
  id          text NOT NULL,
  patient_id  text NOT NULL,
  medication  text NOT NULL,
  schedule    jsonb NOT NULL,
  status      text NOT NULL,
  reason      text,
  decided_at  timestamptz,
  created_at  timestamptz NOT NULL,
  PRIMARY KEY (employer_id, id)
);
CREATE INDEX tapering_proposals_by_time ON tapering_proposals (employer_id, created_at DESC, id DESC);
CREATE INDEX tapering_proposals_by_status ON tapering_proposals (employer_id, status, created_at DESC, id DESC);

CREATE TABLE invoices (
  employer_id  text NOT NULL,
  id           text NOT NULL,
  number       text NOT NULL,
  amount_minor bigint NOT NULL,
  currency     text NOT NULL,
  period_start date NOT NULL,
  period_end   date NOT NULL,
  status       text NOT NULL,
  paid_at      timestamptz,
  created_at   timestamptz NOT NULL,
  PRIMARY KEY (employer_id, id)
);
CREATE INDEX invoices_by_time ON invoices (employer_id, created_at DESC, id DESC);

CREATE TABLE simulations (
  employer_id  text NOT NULL,
  id           text NOT NULL,
  status       text NOT NULL,
  input        jsonb NOT NULL,
  months       jsonb,
  totals       jsonb,
  created_at   timestamptz NOT NULL,
  completed_at timestamptz,
  PRIMARY KEY (employer_id, id)
);
