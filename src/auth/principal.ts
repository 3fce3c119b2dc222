// Who is calling, as every route sees it after authentication, and what they may do.
import type { CommandContext } from '../event-store/command-handler.ts';
import type { Actor } from '../event-store/port.ts';

export const SCOPES = [
  'cohort:read',
  'cohort:write',
  'export:read',
  'export:create',
  'simulate:run',
  'authorization:read',
  'authorization:write',
  'webhook:manage',
  'sso:manage',
  'fhir:read',
  'fhir:write',
] as const;
export type Scope = (typeof SCOPES)[number];

export const ROLES = ['EMPLOYER_ADMIN', 'PATIENT'] as const;
export type Role = (typeof ROLES)[number];

/**
 * What a browser session may do on dual-mode routes, by role. Patients use the member app; of these
 * routes they may only read FHIR, and only their own compartment (src/fhir/compartment.ts).
 */
export const ROLE_SCOPES: Record<Role, readonly Scope[]> = {
  EMPLOYER_ADMIN: SCOPES,
  PATIENT: ['fhir:read'],
};

export type Principal =
  | { kind: 'session'; employerId: string; userId: string; role: Role; sessionId: string; scopes: readonly Scope[] }
  | { kind: 'apiKey'; employerId: string; keyId: string; createdBy: string; scopes: readonly Scope[] };

export type AuthMode = 'session' | 'apiKey';

/** How a route is protected. `public` routes authenticate themselves (SCIM, SAML) or need nothing. */
export type RouteAuth =
  | { public: true }
  | { modes: readonly AuthMode[]; scope?: Scope; role?: Role };

export function actorOf(principal: Principal): Actor {
  return principal.kind === 'session' ? { type: 'user', id: principal.userId } : { type: 'apiKey', id: principal.keyId };
}

/** The context of a command a caller issues through an HTTP request (the request id correlates its events). */
export function commandContextOf(principal: Principal, requestId: string): CommandContext {
  return { tenantId: principal.employerId, actor: actorOf(principal), correlationId: requestId };
}
