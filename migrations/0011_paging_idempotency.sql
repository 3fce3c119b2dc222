-- Keyset paging of the key list (newest first): its index must run in the order of the row comparison
-- (created_at, id) < (...), both columns descending (0004 had id ascending).
DROP INDEX api_keys_by_employer;
CREATE INDEX api_keys_by_employer ON api_keys (employer_id, created_at DESC, id DESC);

-- Idempotency-Key of POSTs that create something (src/http/idempotency.ts). Operational state, not a
-- projection: never rebuilt. One row per employer and key, a claim while the first request runs, then
-- its response; 24 hours after the first request the key may be used afresh.
CREATE TABLE idempotency_keys (
  employer_id     text NOT NULL,
  -- SHA-256 (hex) of the Idempotency-Key header; the key itself is never stored.
  key_hash        text NOT NULL,
  -- SHA-256 (hex) of the method, route, path parameters, caller and body: a retry must match it.
  request_hash    text NOT NULL,
  -- Which request holds the claim, so only it completes or releases the row.
  claim_id        uuid NOT NULL,
  -- NULL while the first request runs.
  response_status integer,
  -- The response (status, replayed headers, body) sealed with AES-256-GCM under ENCRYPTION_KEY,
  -- associated data = employer id and key hash: bodies may carry a secret shown once.
  sealed_response text,
  created_at      timestamptz NOT NULL DEFAULT now(),
  expires_at      timestamptz NOT NULL,
  PRIMARY KEY (employer_id, key_hash)
);
CREATE INDEX idempotency_keys_by_expiry ON idempotency_keys (expires_at);
