-- A signing secret rotated with an overlap (src/webhooks/subscription.ts): until
-- secret_overlap_ends_at, deliveries are signed with the previous secret too (src/webhooks/signing.ts).
-- Both columns NULL when no overlap was asked for or it was ended early; after a natural end they
-- stay until the next rotation, and the delivery reads the previous secret only while now() is before the end.
ALTER TABLE webhook_subscriptions
  ADD COLUMN previous_sealed_secret text,
  ADD COLUMN secret_overlap_ends_at timestamptz,
  -- When the subscription became inactive (with disabled_reason): the console shows since when.
  ADD COLUMN disabled_at timestamptz;
