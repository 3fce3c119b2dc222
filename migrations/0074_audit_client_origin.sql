-- The caller's address and user agent of each audit entry (from its event's metadata; null for system
-- actors and for entries written before they were recorded).
ALTER TABLE audit_log ADD COLUMN ip_address text, ADD COLUMN user_agent text;
