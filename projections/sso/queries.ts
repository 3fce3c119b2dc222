// Reads of the SSO read model and of the users a SAML login resolves.
import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import { notFound } from '../../src/http/errors.ts';
import { DEFAULT_SSO_SETTINGS, samlTrustChangesSchema, type SsoSettings } from '../../src/sso/events.ts';

const pendingTrustChange = z.object({
  changeId: z.string(),
  changes: samlTrustChangesSchema,
  proposedAt: z.string(),
  proposedBy: z.object({ type: z.string(), id: z.string() }),
});
export type PendingTrustChangeView = z.infer<typeof pendingTrustChange>;

const spKey = z.object({ keyId: z.string(), certificate: z.string(), sealedPrivateKey: z.string(), issuedAt: z.string(), retiresAt: z.string().nullable() });
const retiringCertificate = z.object({ certificate: z.string(), trustedUntil: z.string() });
const refreshFailure = z.object({ at: z.string(), code: z.string(), message: z.string() });

/** The IdP metadata read again: certificates it stopped listing (still in their grace period or not), when it last changed trust, its last failure. */
export type MetadataRefreshView = {
  retiringCertificates: Array<z.infer<typeof retiringCertificate>>;
  refreshedAt: string | null;
  failure: z.infer<typeof refreshFailure> | null;
};

export type SsoConfigurationView = {
  settings: SsoSettings;
  metadataRefresh: MetadataRefreshView;
  /** The SP key pairs (src/sso/saml-sp-keys.ts), private keys sealed. */
  spKeys: Array<z.infer<typeof spKey>>;
  scimTokenExists: boolean;
  scimTokenRotatedAt: string | null;
  updatedAt: string | null;
  /** A SAML trust change an API key proposed, not in effect until an administrator confirms it. */
  pendingTrustChange: PendingTrustChangeView | null;
};

const configurationRow = z.object({
  saml_enabled: z.boolean(),
  saml_metadata_url: z.string().nullable(),
  saml_entry_point: z.string().nullable(),
  saml_certificates: z.array(z.string()),
  saml_issuer: z.string().nullable(),
  saml_name_id_format: z.string().nullable(),
  saml_email_attribute: z.string().nullable(),
  saml_first_name_attribute: z.string().nullable(),
  saml_last_name_attribute: z.string().nullable(),
  saml_logout_url: z.string().nullable(),
  saml_sign_authn_requests: z.boolean(),
  saml_idp_initiated_login: z.boolean(),
  saml_sp_keys: z.array(spKey),
  scim_enabled: z.boolean(),
  scim_token_exists: z.boolean(),
  scim_token_rotated_at: z.string().nullable(),
  updated_at: z.string(),
  pending_trust_change: pendingTrustChange.nullable(),
  saml_retiring_certificates: z.array(retiringCertificate),
  saml_metadata_refreshed_at: z.string().nullable(),
  saml_metadata_refresh_failure: refreshFailure.nullable(),
});

/** The employer's SSO configuration (defaults when never saved); 404 when the employer does not exist. */
export async function getSsoConfiguration(pool: DatabasePool, employerId: string): Promise<SsoConfigurationView> {
  const row = await pool.maybeOne(sql.type(configurationRow)`
    SELECT c.saml_enabled, c.saml_metadata_url, c.saml_entry_point, c.saml_certificates, c.saml_issuer, c.saml_name_id_format,
           c.saml_email_attribute, c.saml_first_name_attribute, c.saml_last_name_attribute, c.saml_logout_url, c.saml_sign_authn_requests, c.saml_idp_initiated_login, c.saml_sp_keys, c.scim_enabled,
           c.scim_token_hash IS NOT NULL AS scim_token_exists, c.scim_token_rotated_at, c.updated_at, c.pending_trust_change,
           c.saml_retiring_certificates, c.saml_metadata_refreshed_at, c.saml_metadata_refresh_failure
    FROM sso_configurations c WHERE c.employer_id = ${employerId}`);
  if (!row) {
    if (!(await employerExists(pool, employerId))) throw notFound(`Employer ${employerId}`);
    return { settings: DEFAULT_SSO_SETTINGS, metadataRefresh: { retiringCertificates: [], refreshedAt: null, failure: null }, spKeys: [], scimTokenExists: false, scimTokenRotatedAt: null, updatedAt: null, pendingTrustChange: null };
  }
  return {
    settings: {
      samlEnabled: row.saml_enabled,
      samlMetadataUrl: row.saml_metadata_url,
      samlEntryPoint: row.saml_entry_point,
      samlCertificates: row.saml_certificates,
      samlIssuer: row.saml_issuer,
      samlNameIdFormat: row.saml_name_id_format,
      samlEmailAttribute: row.saml_email_attribute,
      samlFirstNameAttribute: row.saml_first_name_attribute,
      samlLastNameAttribute: row.saml_last_name_attribute,
      samlLogoutUrl: row.saml_logout_url,
      samlSignAuthnRequests: row.saml_sign_authn_requests,
      samlIdpInitiatedLogin: row.saml_idp_initiated_login,
      scimEnabled: row.scim_enabled,
    },
    spKeys: row.saml_sp_keys,
    metadataRefresh: { retiringCertificates: row.saml_retiring_certificates, refreshedAt: row.saml_metadata_refreshed_at, failure: row.saml_metadata_refresh_failure },
    scimTokenExists: row.scim_token_exists,
    scimTokenRotatedAt: row.scim_token_rotated_at,
    updatedAt: row.updated_at,
    pendingTrustChange: row.pending_trust_change,
  };
}

async function employerExists(pool: DatabasePool, employerId: string): Promise<boolean> {
  return pool.exists(sql.unsafe`SELECT 1 FROM employers WHERE id = ${employerId}`);
}

/** Whether SCIM is on, its token and the token a rotation replaced while it still works, as key management shows them. */
export async function getScimTokenStatus(pool: DatabasePool, employerId: string) {
  const row = await pool.maybeOne(sql.type(z.object({
    scim_enabled: z.boolean(), token_exists: z.boolean(), rotated_at: z.string().nullable(), previous_valid_until: z.string().nullable(),
  }))`
    SELECT scim_enabled, scim_token_hash IS NOT NULL AS token_exists, scim_token_rotated_at AS rotated_at,
           CASE WHEN previous_scim_token_valid_until > now() THEN previous_scim_token_valid_until END AS previous_valid_until
    FROM sso_configurations WHERE employer_id = ${employerId}`);
  return {
    scimEnabled: row?.scim_enabled ?? false,
    tokenExists: row?.token_exists ?? false,
    rotatedAt: row?.rotated_at ?? null,
    previousTokenValidUntil: row?.previous_valid_until ?? null,
  };
}

/** A SCIM token that works: the current one (valid_until null), or the one a rotation replaced, until valid_until. */
const workingToken = z.object({ employer_id: z.string(), token_id: z.string(), token_hash: z.string(), valid_until: z.string().nullable() });

/** Every working SCIM token of employers with SCIM enabled; a replaced one while its overlap has not ended. */
const workingTokens = sql.fragment`
  SELECT employer_id, scim_token_id AS token_id, scim_token_hash AS token_hash, NULL::timestamptz AS valid_until
  FROM sso_configurations WHERE scim_enabled AND scim_token_hash IS NOT NULL AND scim_token_id IS NOT NULL
  UNION ALL
  SELECT employer_id, previous_scim_token_id, previous_scim_token_hash, previous_scim_token_valid_until
  FROM sso_configurations WHERE scim_enabled AND previous_scim_token_hash IS NOT NULL AND previous_scim_token_valid_until > now()`;

/** The employer whose working SCIM token hashes to `tokenHash`, and until when it works (null: current); null when none. */
export async function findScimTokenOwner(pool: DatabasePool, tokenHash: string) {
  return pool.maybeOne(sql.type(workingToken)`SELECT * FROM (${workingTokens}) t WHERE t.token_hash = ${tokenHash}`);
}

/** The hashes of the working SCIM tokens, each with until when it works (null: current). */
export async function workingScimTokenHashes(pool: DatabasePool) {
  return pool.any(sql.type(workingToken.pick({ token_hash: true, valid_until: true }))`SELECT token_hash, valid_until FROM (${workingTokens}) t`);
}

/** Every employer whose SAML trust follows an IdP metadata URL, and that URL (the daily refresh). */
export async function samlMetadataSources(pool: DatabasePool): Promise<ReadonlyArray<{ employer_id: string; saml_metadata_url: string }>> {
  return pool.any(sql.type(z.object({ employer_id: z.string(), saml_metadata_url: z.string() }))`
    SELECT employer_id, saml_metadata_url FROM sso_configurations WHERE saml_metadata_url IS NOT NULL ORDER BY employer_id`);
}

/** The employers whose SAML sign-in is on (the daily certificate expiry check). */
export async function samlEnabledEmployers(pool: DatabasePool): Promise<readonly string[]> {
  return pool.anyFirst(sql.type(z.object({ employer_id: z.string() }))`SELECT employer_id FROM sso_configurations WHERE saml_enabled ORDER BY employer_id`);
}
