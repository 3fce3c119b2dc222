-- SCIM DELETE frees the user's e-mail address (RFC 7644 section 3.6: a deleted resource must not be
-- considered in conflict calculation), so a new user may take it while the deleted one is kept,
-- deactivated. Addresses stay unique among users that are not deleted.
DROP INDEX users_by_email;
CREATE UNIQUE INDEX users_by_email ON users (lower(email)) WHERE NOT scim_deleted;
