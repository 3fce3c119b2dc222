// Read model `sso_configurations`: each employer's SSO settings in effect, the hash of its current SCIM
// token and the pending SAML trust change, read by GET /api/employer/sso, the SAML routes and SCIM
// authentication.
import { sql } from 'slonik';
import { SSO_CONFIGURATION_EVENT_TYPES, type SsoConfigurationEvent, type SsoSettings } from '../../src/sso/events.ts';
import type { RecordedEvent } from '../../src/event-store/port.ts';
import { defineProjection } from '../../src/event-store/projection.ts';

/** Every SSO configuration change clears the SCIM token caches of all processes (src/sso/scim-token.ts). */
export const SCIM_TOKENS_CHANGED_CHANNEL = 'scim_tokens_changed';

export const SSO_SETTING_COLUMNS: Record<keyof SsoSettings, string> = {
  samlEnabled: 'saml_enabled',
  samlMetadataUrl: 'saml_metadata_url',
  samlEntryPoint: 'saml_entry_point',
  samlCertificates: 'saml_certificates',
  samlIssuer: 'saml_issuer',
  samlNameIdFormat: 'saml_name_id_format',
  samlEmailAttribute: 'saml_email_attribute',
  samlFirstNameAttribute: 'saml_first_name_attribute',
  samlLastNameAttribute: 'saml_last_name_attribute',
  samlLogoutUrl: 'saml_logout_url',
  samlSignAuthnRequests: 'saml_sign_authn_requests',
  samlIdpInitiatedLogin: 'saml_idp_initiated_login',
  scimEnabled: 'scim_enabled',
};

export const ssoProjection = defineProjection<SsoConfigurationEvent>({
  name: 'sso',
  tables: ['sso_configurations'],
  eventTypes: SSO_CONFIGURATION_EVENT_TYPES,
  awaitedByCommands: true,
  async apply(tx, events) {
    for (const event of events) {
      const { employerId } = event.data;
      const at = event.metadata.occurredAt;
      const assignments = assignmentsOf(event);
      if (assignments.length === 0) continue;
      await tx.query(sql.unsafe`INSERT INTO sso_configurations (employer_id, updated_at) VALUES (${employerId}, ${at}) ON CONFLICT DO NOTHING`);
      await tx.query(sql.unsafe`
        UPDATE sso_configurations SET ${sql.join(assignments, sql.fragment`, `)}
        WHERE employer_id = ${employerId}`);
    }
    // Every process drops its cached SCIM token lookups (src/sso/scim-token.ts). Sent before the
    // checkpoint's own notification, so a command that waited for this projection finds them dropped.
    await tx.query(sql.unsafe`SELECT pg_notify(${SCIM_TOKENS_CHANGED_CHANNEL}, '')`);
  },
});

function settingAssignments(changes: Partial<SsoSettings>) {
  return (Object.entries(changes) as Array<[keyof SsoSettings, SsoSettings[keyof SsoSettings]]>).map(([key, value]) =>
    sql.fragment`${sql.identifier([SSO_SETTING_COLUMNS[key]])} = ${Array.isArray(value) ? sql.jsonb(value) : value}`,
  );
}

/** Certificates set directly replace the retiring ones; a new metadata URL clears its refresh's failure (as the decider's evolve). */
function directSettingAssignments(changes: Partial<SsoSettings>) {
  return [
    ...settingAssignments(changes),
    ...(changes.samlCertificates === undefined ? [] : [sql.fragment`saml_retiring_certificates = '[]'`]),
    ...(changes.samlMetadataUrl === undefined ? [] : [sql.fragment`saml_metadata_refresh_failure = NULL`]),
  ];
}

/** The columns an event sets: settings in effect (and updated_at) for changes, the pending change for proposals. */
function assignmentsOf(event: RecordedEvent<SsoConfigurationEvent>) {
  const at = event.metadata.occurredAt;
  switch (event.type) {
    case 'SsoConfigurationUpdated': {
      const { changes, issuedScimToken, revokedScimTokenId } = event.data;
      const assignments = directSettingAssignments(changes);
      if (issuedScimToken) {
        assignments.push(
          sql.fragment`scim_token_id = ${issuedScimToken.tokenId}`,
          sql.fragment`scim_token_hash = ${issuedScimToken.tokenHash}`,
          sql.fragment`scim_token_rotated_at = ${issuedScimToken.issuedAt}`,
        );
      } else if (revokedScimTokenId) {
        assignments.push(sql.fragment`scim_token_id = NULL`, sql.fragment`scim_token_hash = NULL`, sql.fragment`scim_token_rotated_at = NULL`);
      }
      return [...assignments, sql.fragment`updated_at = ${at}`];
    }
    case 'SsoTrustChangeProposed': {
      const pending = { changeId: event.data.changeId, changes: event.data.changes, proposedAt: at, proposedBy: event.metadata.actor };
      return [sql.fragment`pending_trust_change = ${sql.jsonb(pending)}`];
    }
    case 'SsoTrustChangeConfirmed':
      return [...directSettingAssignments(event.data.changes), sql.fragment`pending_trust_change = NULL`, sql.fragment`updated_at = ${at}`];
    case 'SsoTrustChangeDiscarded':
      return [sql.fragment`pending_trust_change = NULL`];
    case 'SamlMetadataRefreshed': {
      const { addedCertificates, retiringCertificates, removedCertificates, entryPoint } = event.data;
      const leaving = sql.jsonb([...retiringCertificates.map((entry) => entry.certificate), ...removedCertificates, ...addedCertificates]);
      return [
        sql.fragment`saml_certificates = (SELECT coalesce(jsonb_agg(pem ORDER BY n), '[]') FROM jsonb_array_elements(saml_certificates) WITH ORDINALITY AS c(pem, n) WHERE NOT ${leaving} @> jsonb_build_array(pem)) || ${sql.jsonb(addedCertificates)}`,
        sql.fragment`saml_retiring_certificates = (SELECT coalesce(jsonb_agg(r ORDER BY n), '[]') FROM jsonb_array_elements(saml_retiring_certificates) WITH ORDINALITY AS c(r, n) WHERE NOT ${leaving} @> jsonb_build_array(r->'certificate')) || ${sql.jsonb(retiringCertificates)}`,
        ...(entryPoint === null ? [] : [sql.fragment`saml_entry_point = ${entryPoint}`]),
        sql.fragment`saml_metadata_refreshed_at = ${at}`,
        sql.fragment`saml_metadata_refresh_failure = NULL`,
      ];
    }
    case 'SamlMetadataRefreshFailed':
      return [sql.fragment`saml_metadata_refresh_failure = ${sql.jsonb({ at, code: event.data.code, message: event.data.message })}`];
    case 'SamlSpKeyIssued': {
      // As the decider's keysAfterIssue: keys retired before this one was issued dropped, those it replaces given their end, it appended.
      const { key, retiring } = event.data;
      return [sql.fragment`saml_sp_keys = (
        SELECT coalesce(jsonb_agg(CASE WHEN r."retiresAt" IS NULL THEN k ELSE jsonb_set(k, '{retiresAt}', to_jsonb(r."retiresAt")) END ORDER BY n), '[]')
        FROM jsonb_array_elements(saml_sp_keys) WITH ORDINALITY AS c(k, n)
        LEFT JOIN jsonb_to_recordset(${sql.jsonb(retiring)}) AS r("keyId" text, "retiresAt" text) ON r."keyId" = k->>'keyId'
        WHERE k->>'retiresAt' IS NULL OR (k->>'retiresAt')::timestamptz > ${key.issuedAt}::timestamptz
      ) || jsonb_build_array(${sql.jsonb(key)}::jsonb)`];
    }
    case 'SamlCertificateExpiryWarned':
      return []; // the warning is in the audit log and the mail; GET computes the banner from the certificates
    case 'ScimTokenOverlapStarted':
      return [
        sql.fragment`previous_scim_token_id = ${event.data.tokenId}`,
        sql.fragment`previous_scim_token_hash = ${event.data.tokenHash}`,
        sql.fragment`previous_scim_token_valid_until = ${event.data.endsAt}`,
      ];
    case 'ScimTokenOverlapEnded':
      return [sql.fragment`previous_scim_token_id = NULL`, sql.fragment`previous_scim_token_hash = NULL`, sql.fragment`previous_scim_token_valid_until = NULL`];
  }
}
