-- The request pipeline refuses a key whose creator is deactivated (401 API_KEY_REVOKED), even one
-- that was never revoked (keys created before their creator's stream recorded them). The api-keys
-- projection keeps this flag from the user events; existing rows take it from `users` once.
ALTER TABLE api_keys ADD COLUMN creator_active boolean NOT NULL DEFAULT true;
UPDATE api_keys k SET creator_active = u.active FROM users u WHERE u.id = k.created_by AND u.employer_id = k.employer_id AND NOT u.active;
