-- The employer's mapping of IdP groups to the administrator role (AdminRoleMappingSet), as the tenants
-- projection applies it: {"scimGroups": [...], "samlAttribute": null | "...", "samlValues": [...]}.
ALTER TABLE employers ADD COLUMN admin_role_mapping jsonb NOT NULL DEFAULT '{"scimGroups": [], "samlAttribute": null, "samlValues": []}'::jsonb;
