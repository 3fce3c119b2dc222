// Events of the SMART client aggregate (src/smart-clients/smart-client.ts): a client of SMART Backend
// Services, registered by an employer's administrator, that authenticates at the token endpoint with
// JWTs signed by one of its keys. Its key set is public (public JWKs only) and may travel in events;
// `scopes` are SMART system scopes as registered (src/smart-clients/scopes.ts gives them their meaning).
import { z } from 'zod';
import { eventSchema, type EventOf } from '../event-store/schemas.ts';

/** A JWK Set of public keys: each key's members as given (checked public by src/smart-clients/key-set.ts). */
export const publicJwks = z.object({ keys: z.array(z.record(z.string(), z.unknown())) });
export type PublicJwks = z.infer<typeof publicJwks>;

/** Where a client's keys are: given inline, or at an https URL fetched (and cached) when an assertion arrives. */
const keySource = z.object({ jwks: publicJwks.nullable(), jwksUrl: z.string().nullable() });
export type KeySource = z.infer<typeof keySource>;

const smartClientRegistered = eventSchema('SmartClientRegistered', keySource.extend({
  clientId: z.string(),
  name: z.string(),
  scopes: z.array(z.string()),
  registeredBy: z.string(),
  registeredAt: z.string(),
}));
const smartClientKeysReplaced = eventSchema('SmartClientKeysReplaced', keySource.extend({ clientId: z.string(), replacedAt: z.string() }));
const smartClientRevoked = eventSchema('SmartClientRevoked', z.object({ clientId: z.string(), revokedAt: z.string() }));

export const smartClientEvents = [smartClientRegistered, smartClientKeysReplaced, smartClientRevoked] as const;

export type SmartClientRegistered = EventOf<typeof smartClientRegistered>;
export type SmartClientEvent = EventOf<(typeof smartClientEvents)[number]>;
