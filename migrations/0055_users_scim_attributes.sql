-- The SCIM attributes kept beyond the sign-in profile (name.middleName, name.formatted, title,
-- phoneNumbers, addresses, preferredLanguage, locale, timezone, the Enterprise User extension), as the
-- tenants projection opens them from the user's sealed events: keys absent or null when not set.
ALTER TABLE users ADD COLUMN scim_attributes jsonb NOT NULL DEFAULT '{}'::jsonb;
