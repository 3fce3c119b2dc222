// Events of sign-in tokens (src/identity/signin-token.ts) and sessions (src/identity/session.ts), which
// the identity read model (projections/identity/) applies.
import { z } from 'zod';
import { eventSchema, type EventOf } from '../event-store/schemas.ts';

const signInTokenIssued = eventSchema('SignInTokenIssued', z.object({
  tokenId: z.string(),
  userId: z.string(),
  tokenHash: z.string(),
  expiresAt: z.string(),
  via: z.enum(['cli', 'saml']),
}));
const signInTokenRedeemed = eventSchema('SignInTokenRedeemed', z.object({ tokenId: z.string(), userId: z.string(), sessionId: z.string() }));

export const SESSION_END_REASONS = ['logout', 'user_deactivated', 'saml_logout', 'role_revoked'] as const;
export type SessionEndReason = (typeof SESSION_END_REASONS)[number];

const sessionStarted = eventSchema('SessionStarted', z.object({ sessionId: z.string(), userId: z.string(), sessionHash: z.string(), expiresAt: z.string() }));
const sessionEnded = eventSchema('SessionEnded', z.object({ sessionId: z.string(), userId: z.string(), reason: z.enum(SESSION_END_REASONS) }));

const signInTokenEvents = [signInTokenIssued, signInTokenRedeemed] as const;
const sessionEvents = [sessionStarted, sessionEnded] as const;
export const identityEvents = [...signInTokenEvents, ...sessionEvents] as const;

export type SignInTokenEvent = EventOf<(typeof signInTokenEvents)[number]>;
export type SessionEvent = EventOf<(typeof sessionEvents)[number]>;
