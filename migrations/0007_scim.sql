-- SCIM 2.0 provisioning (src/scim): the users read model keeps the SCIM e-mail list, and groups get
-- their own read model (projections/scim-groups.ts).

-- Every e-mail the IdP sent, as SCIM objects { value, type, primary }; for users created elsewhere
-- (CLI, SAML) the sign-in e-mail as the one work address. `work_email` is the work address, kept as a
-- column so that Entra ID's `emails[type eq "work"].value eq "..."` filter is an index lookup.
ALTER TABLE users
  ADD COLUMN emails jsonb NOT NULL DEFAULT '[]',
  ADD COLUMN work_email text;
UPDATE users SET emails = jsonb_build_array(jsonb_build_object('value', email, 'type', 'work', 'primary', true)), work_email = email;
CREATE INDEX users_by_employer_work_email ON users (employer_id, lower(work_email));
CREATE INDEX users_by_employer_display_name ON users (employer_id, lower(display_name));

CREATE TABLE groups (
  id           text PRIMARY KEY,
  employer_id  text NOT NULL,
  display_name text NOT NULL,
  external_id  text,
  version      bigint NOT NULL,
  created_at   timestamptz NOT NULL,
  updated_at   timestamptz NOT NULL
);
-- SCIM lists page in (created_at, id) order.
CREATE INDEX groups_by_employer ON groups (employer_id, created_at, id);
CREATE INDEX groups_by_employer_display_name ON groups (employer_id, lower(display_name));
CREATE INDEX groups_by_employer_external_id ON groups (employer_id, external_id);

CREATE TABLE group_members (
  group_id    text NOT NULL,
  user_id     text NOT NULL,
  employer_id text NOT NULL,
  -- Global position of the event that added the member, and its place in that event's list:
  -- members list in the order they were added.
  added_at    bigint NOT NULL,
  added_rank  integer NOT NULL,
  PRIMARY KEY (group_id, user_id)
);
CREATE INDEX group_members_by_user ON group_members (employer_id, user_id);
