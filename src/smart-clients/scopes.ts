// SMART system scopes (SMART App Launch 2.x, section "Scopes"), as clients of Backend Services ask for
// them: v2 `system/<Type|*>.<cruds>` (permissions in that order, any non-empty subset) and v1
// `system/<Type|*>.(read|write|*)`. The types are the FHIR types served (FHIR_RESOURCE_TYPES). They map
// onto the service's scopes: r and s onto fhir:read, c, u and d onto fhir:write, each limited to the
// scope's types. A token's scopes are the intersection of those asked and those registered.
import type { ResourceTypeLimits, Scope } from '../auth/principal.ts';
import { FHIR_RESOURCE_TYPES, isFhirResourceType } from '../patients/events.ts';

const PERMISSIONS = ['c', 'r', 'u', 'd', 's'] as const;
type Permission = (typeof PERMISSIONS)[number];
export type SmartScope = { resourceType: string; permissions: ReadonlySet<Permission> };

const V2 = /^system\/([A-Za-z]{1,64}|\*)\.(c?r?u?d?s?)$/;
const V1 = /^system\/([A-Za-z]{1,64}|\*)\.(read|write|\*)$/;
const V1_PERMISSIONS: Record<string, readonly Permission[]> = { read: ['r', 's'], write: ['c', 'u', 'd'], '*': PERMISSIONS };

export const SMART_SCOPE_MAX = 100;
export const SCOPE_SYNTAX = `SMART system scopes over ${FHIR_RESOURCE_TYPES.join(', ')} or *: v2 system/<Type>.<cruds> (e.g. system/*.rs, system/Patient.rs, system/Observation.cruds) or v1 system/<Type>.read|write|*`;

/** What the SMART configuration lists: reading and full access, for all types and for each (any subset of cruds, and v1, is accepted too). */
export const SUPPORTED_SCOPES = ['*', ...FHIR_RESOURCE_TYPES].flatMap((type) => [`system/${type}.rs`, `system/${type}.cruds`]);

/** The scope `text` names, or null when it is no system scope over a served type. */
export function parseSmartScope(text: string): SmartScope | null {
  const match = V2.exec(text) ?? V1.exec(text);
  if (!match || match[2] === '') return null;
  const [, resourceType, permissions] = match as unknown as [string, string, string];
  if (resourceType !== '*' && !isFhirResourceType(resourceType)) return null;
  const granted = V1_PERMISSIONS[permissions] ?? [...permissions] as Permission[];
  return { resourceType, permissions: new Set(granted) };
}

/** The v2 form: system/<Type>.<permissions in cruds order>. */
export function formatSmartScope(scope: SmartScope): string {
  return `system/${scope.resourceType}.${PERMISSIONS.filter((p) => scope.permissions.has(p)).join('')}`;
}

function intersect(a: SmartScope, b: SmartScope): SmartScope | null {
  const resourceType = a.resourceType === '*' ? b.resourceType : b.resourceType === '*' || b.resourceType === a.resourceType ? a.resourceType : null;
  const permissions = new Set(PERMISSIONS.filter((p) => a.permissions.has(p) && b.permissions.has(p)));
  return resourceType === null || permissions.size === 0 ? null : { resourceType, permissions };
}

/** What of `requested` the registration `registered` allows, in the v2 form, without repetition. */
export function grantedScopes(requested: readonly SmartScope[], registered: readonly SmartScope[]): string[] {
  const granted = requested.flatMap((asked) => registered.map((allowed) => intersect(asked, allowed)).filter((scope) => scope !== null));
  return [...new Set(granted.map(formatSmartScope))];
}

/** The service scopes (fhir:read, fhir:write) that `scopes` amount to, and the types each reaches. */
export function serviceScopesOf(scopes: readonly SmartScope[]): { scopes: Scope[]; resourceTypes: ResourceTypeLimits } {
  const reach = (letters: readonly Permission[]) => {
    const types = scopes.filter((scope) => letters.some((p) => scope.permissions.has(p))).map((scope) => scope.resourceType);
    return types.includes('*') ? 'all' as const : [...new Set(types)];
  };
  const resourceTypes: ResourceTypeLimits = {};
  const read = reach(['r', 's']);
  const write = reach(['c', 'u', 'd']);
  if (read.length > 0) resourceTypes['fhir:read'] = read;
  if (write.length > 0) resourceTypes['fhir:write'] = write;
  return { scopes: Object.keys(resourceTypes) as Scope[], resourceTypes };
}
