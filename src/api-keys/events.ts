// Events of the API key aggregate (src/api-keys/api-key.ts): what the decider folds and the api-keys
// read model (projections/api-keys/) applies. The schemas are the events' shapes; the types are inferred.
import { z } from 'zod';
import { SCOPES } from '../auth/principal.ts';
import { eventSchema, type EventOf } from '../event-store/schemas.ts';

export const REVOKE_REASONS = ['admin', 'creator_deactivated', 'creator_role_revoked'] as const;
export type RevokeReason = (typeof REVOKE_REASONS)[number];

const apiKeyCreated = eventSchema('ApiKeyCreated', z.object({
  keyId: z.string(),
  name: z.string(),
  /** SHA-256 (hex) of the raw key; the raw key never enters an event. */
  keyHash: z.string(),
  keyPrefix: z.string(),
  scopes: z.array(z.enum(SCOPES)),
  allowedIpCidrs: z.array(z.string()),
  expiresAt: z.string().nullable(),
  rateLimitPerMinute: z.number().int().nullable(),
  createdBy: z.string(),
  createdAt: z.string(),
}));
const apiKeyRenamed = eventSchema('ApiKeyRenamed', z.object({ keyId: z.string(), name: z.string() }));
const apiKeySuspended = eventSchema('ApiKeySuspended', z.object({ keyId: z.string() }));
const apiKeyResumed = eventSchema('ApiKeyResumed', z.object({ keyId: z.string() }));
const apiKeyRevoked = eventSchema('ApiKeyRevoked', z.object({ keyId: z.string(), reason: z.enum(REVOKE_REASONS), revokedAt: z.string() }));

/** The settings PATCH may change in place, beside the name. */
export const apiKeySettings = z.object({
  scopes: z.array(z.enum(SCOPES)),
  allowedIpCidrs: z.array(z.string()),
  expiresAt: z.string().nullable(),
  rateLimitPerMinute: z.number().int().nullable(),
});
export type ApiKeySettings = z.infer<typeof apiKeySettings>;
/** Only the settings that changed. */
const apiKeySettingsChanged = eventSchema('ApiKeySettingsChanged', z.object({ keyId: z.string(), changes: apiKeySettings.partial() }));
/**
 * The key was rolled into `successorKeyId` (a new key with its settings, created in the same append):
 * it is revoked from `revokesAt` on, like an expiry, without a further event (the pipeline and the
 * status rule compare the time; projections/api-keys/queries.ts apiKeyStatus).
 */
const apiKeyRolled = eventSchema('ApiKeyRolled', z.object({ keyId: z.string(), successorKeyId: z.string(), revokesAt: z.string() }));

export const apiKeyEvents = [apiKeyCreated, apiKeyRenamed, apiKeySuspended, apiKeyResumed, apiKeyRevoked, apiKeySettingsChanged, apiKeyRolled] as const;

export type ApiKeyCreated = EventOf<typeof apiKeyCreated>;
export type ApiKeyEvent = EventOf<(typeof apiKeyEvents)[number]>;
