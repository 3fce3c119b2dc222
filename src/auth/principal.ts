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
  // An addition to SPEC 5.3: the audit API (list and export) for auditors' keys.
  'audit:read',
] as const;
export type Scope = (typeof SCOPES)[number];

export const ROLES = ['EMPLOYER_ADMIN', 'PATIENT'] as const;
export type Role = (typeof ROLES)[number];

/**
 * What a browser session may do on dual-mode routes, by role. Patients use the member app; of these
 * routes they may only read FHIR, and only their own compartment (src/patients/fhir/compartment.ts).
 */
export const ROLE_SCOPES: Record<Role, readonly Scope[]> = {
  EMPLOYER_ADMIN: SCOPES,
  PATIENT: ['fhir:read'],
};

/**
 * For each scope a SMART access token holds, the resource types it reaches ('all' or a list): a route
 * with a `resourceType` path parameter is open to the token only for those types.
 */
export type ResourceTypeLimits = Partial<Record<Scope, readonly string[] | 'all'>>;

export type Principal =
  | { kind: 'session'; employerId: string; userId: string; role: Role; sessionId: string; scopes: readonly Scope[] }
  | { kind: 'apiKey'; employerId: string; keyId: string; createdBy: string; scopes: readonly Scope[] }
  | { kind: 'smartClient'; employerId: string; clientId: string; scopes: readonly Scope[]; resourceTypes: ResourceTypeLimits };

/** Whether `principal` holds `scope` for `resourceType`: a SMART token only for the types its scopes name. */
export function holdsScopeFor(principal: Principal, scope: Scope, resourceType: string): boolean {
  if (!principal.scopes.includes(scope)) return false;
  if (principal.kind !== 'smartClient') return true;
  const types = principal.resourceTypes[scope];
  return types === 'all' || (types?.includes(resourceType) ?? false);
}

/** `smartToken`: a SMART Backend Services access token as `Authorization: Bearer` (the FHIR and Bulk Data routes). */
export type AuthMode = 'session' | 'apiKey' | 'smartToken';

/**
 * A service of the platform (clinical, billing) calling the internal platform API with a platform
 * service token. It acts for no employer of its own: the employer is in the route's path.
 */
export type PlatformPrincipal = { kind: 'platformToken'; tokenId: string; families: readonly string[] };

/** Bearer credentials that a route, or its plugin, checks itself: SCIM's per-employer token (the SCIM plugin's hook), the cron secret (the cron handlers). */
export type RouteCheckedCredential = 'scimToken' | 'cronSecret';

/**
 * How a route is protected. `public` routes need nothing or authenticate by what they carry (a SAML
 * response, a sign-in token). `checkedByRoute` routes need the named bearer credential, which the route
 * checks itself: the authentication pipeline reads nothing, /api/openapi declares it. `platformFamily`
 * routes are the internal platform API: a platform service token holding that family, and nothing else
 * (employer routes, in turn, never accept platform tokens). Otherwise `modes` says which credentials are
 * read, `scope` what an API key must hold (and a session's role must grant), and `role` the one role a
 * session must have (API keys are checked by scope alone).
 */
export type RouteAuth =
  | { public: true }
  | { checkedByRoute: RouteCheckedCredential }
  | { platformFamily: string }
  | EmployerRouteAuth;
export type EmployerRouteAuth = { modes: readonly AuthMode[]; scope?: Scope; role?: Role };

/** Every credential a route can require: each is a security scheme of /api/openapi (src/http/openapi.ts). */
export type Credential = AuthMode | 'platformToken' | RouteCheckedCredential;

/** The credentials a route accepts, any one of which will do; none for a public route. */
export function credentialsOf(auth: RouteAuth): readonly Credential[] {
  if ('public' in auth) return [];
  if ('checkedByRoute' in auth) return [auth.checkedByRoute];
  if ('platformFamily' in auth) return ['platformToken'];
  return auth.modes;
}

/** The session roles that may call a route: its role, if it names one, and those whose scopes hold its scope. */
export function sessionRolesOf(auth: EmployerRouteAuth): Role[] {
  return ROLES.filter((role) => (auth.role === undefined || role === auth.role) && (auth.scope === undefined || ROLE_SCOPES[role].includes(auth.scope)));
}

export function actorOf(principal: Principal): Actor {
  switch (principal.kind) {
    case 'session':
      return { type: 'user', id: principal.userId };
    case 'apiKey':
      return { type: 'apiKey', id: principal.keyId };
    case 'smartClient':
      return { type: 'smartClient', id: principal.clientId };
  }
}

/** The context of a command a caller issues through an HTTP request (the request id correlates its events). */
export function commandContextOf(principal: Principal, requestId: string): CommandContext {
  return { tenantId: principal.employerId, actor: actorOf(principal), correlationId: requestId };
}
