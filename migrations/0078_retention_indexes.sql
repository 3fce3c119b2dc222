-- The daily retention job (src/operations/retention.ts) finds what it prunes by these, a batch at a time.
CREATE INDEX sessions_by_expiry ON sessions (expires_at);
CREATE INDEX signin_tokens_by_expiry ON signin_tokens (expires_at);
CREATE INDEX webhook_deliveries_by_creation ON webhook_deliveries (created_at);
CREATE INDEX webhook_delivery_attempts_by_request ON webhook_delivery_attempts (requested_at);
CREATE INDEX webhook_recoveries_by_request ON webhook_recoveries (requested_at);
