// Events of sign-in tokens (src/identity/signin-token.ts) and sessions (src/identity/session.ts), which
// the identity read model (projections/identity/) applies.
import type { DomainEvent } from '../event-store/decider.ts';

export type SignInTokenIssued = DomainEvent<'SignInTokenIssued', { tokenId: string; userId: string; tokenHash: string; expiresAt: string; via: 'cli' | 'saml' }>;
export type SignInTokenRedeemed = DomainEvent<'SignInTokenRedeemed', { tokenId: string; userId: string; sessionId: string }>;
export type SignInTokenEvent = SignInTokenIssued | SignInTokenRedeemed;

export type SessionEndReason = 'logout' | 'user_deactivated';
export type SessionStarted = DomainEvent<'SessionStarted', { sessionId: string; userId: string; sessionHash: string; expiresAt: string }>;
export type SessionEnded = DomainEvent<'SessionEnded', { sessionId: string; userId: string; reason: SessionEndReason }>;
export type SessionEvent = SessionStarted | SessionEnded;
