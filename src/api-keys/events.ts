// Events of the API key aggregate (src/api-keys/api-key.ts): what the decider folds and the api-keys
// read model (projections/api-keys/) applies.
import type { Scope } from '../auth/principal.ts';
import type { DomainEvent } from '../event-store/decider.ts';

export type RevokeReason = 'admin' | 'creator_deactivated';

export type ApiKeyCreated = DomainEvent<'ApiKeyCreated', {
  keyId: string;
  name: string;
  /** SHA-256 (hex) of the raw key; the raw key never enters an event. */
  keyHash: string;
  keyPrefix: string;
  scopes: Scope[];
  allowedIpCidrs: string[];
  expiresAt: string | null;
  rateLimitPerMinute: number | null;
  createdBy: string;
  createdAt: string;
}>;
export type ApiKeyRenamed = DomainEvent<'ApiKeyRenamed', { keyId: string; name: string }>;
export type ApiKeySuspended = DomainEvent<'ApiKeySuspended', { keyId: string }>;
export type ApiKeyResumed = DomainEvent<'ApiKeyResumed', { keyId: string }>;
export type ApiKeyRevoked = DomainEvent<'ApiKeyRevoked', { keyId: string; reason: RevokeReason; revokedAt: string }>;
export type ApiKeyEvent = ApiKeyCreated | ApiKeyRenamed | ApiKeySuspended | ApiKeyResumed | ApiKeyRevoked;
