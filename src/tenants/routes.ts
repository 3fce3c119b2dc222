// The employer's mapping of IdP groups to the administrator role: browser session of an
// EMPLOYER_ADMIN only (an API key, which may hold sso:manage and so obtain a SCIM token, must not
// decide which IdP groups become administrators).
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { AppContext } from '../app-context.ts';
import { commandContextOf } from '../auth/principal.ts';
import { NAME_MAX } from '../http/limits.ts';
import { defineRoute } from '../http/route.ts';
import type { RoutePlugin } from '../http/server.ts';
import { adminRoleMappingOf } from '../../projections/tenants/queries.ts';
import { setAdminRoleMapping } from './admin-role.ts';

const auth = { modes: ['session'], role: 'EMPLOYER_ADMIN' } as const;
const tags = ['Administrators from the IdP'];
const URL = '/api/employer/admin-role-mapping';
const MAPPED_MAX = 50;

const groupName = z.string().trim().min(1).max(NAME_MAX);
const mappingBody = z.strictObject({
  scimGroups: z.array(groupName).max(MAPPED_MAX).describe('SCIM groups whose members are administrators, each by id or displayName (compared without case)'),
  samlAttribute: groupName.nullable().describe('The SAML attribute carrying groups (e.g. `groups` or `http://schemas.microsoft.com/ws/2008/06/identity/claims/groups`); null: no SAML mapping'),
  samlValues: z.array(groupName).max(MAPPED_MAX).describe('Values of that attribute that make the user an administrator at sign-in (compared exactly)'),
}).refine((mapping) => mapping.samlAttribute !== null || mapping.samlValues.length === 0, { message: 'samlValues need a samlAttribute', path: ['samlValues'] });
const mappingResponse = z.object({ scimGroups: z.array(z.string()), samlAttribute: z.string().nullable(), samlValues: z.array(z.string()) }).meta({ id: 'AdminRoleMapping' });

const WHAT_THE_MAPPING_DOES =
  'Members of a mapped SCIM group are administrators (EMPLOYER_ADMIN) from the moment the IdP adds them; removing them from every mapped group takes the role away ' +
  '(within a second, across processes), ends their sessions and revokes the API keys they created. A SAML sign-in whose assertion carries a mapped value in the ' +
  'attribute makes the user an administrator. A new mapping makes the current members of its groups administrators. The identity provider never removes the ' +
  'last administrator: that removal (or deactivation) is refused, audited and e-mailed to the administrators.';

export const adminRoleRoutes: RoutePlugin = async function adminRoleRoutesPlugin(fastify: FastifyInstance, { ctx }: { ctx: AppContext }) {
  defineRoute(fastify, ctx, {
    method: 'GET',
    url: URL,
    summary: 'The IdP groups mapped to the administrator role',
    description: WHAT_THE_MAPPING_DOES,
    tags,
    auth,
    responses: { 200: { description: 'The mapping (empty lists and a null attribute when none)', schema: mappingResponse } },
    handler: async ({ principal }) => adminRoleMappingOf(ctx.db.slonik, principal.employerId),
  });

  defineRoute(fastify, ctx, {
    method: 'PUT',
    url: URL,
    summary: 'Map IdP groups to the administrator role',
    description: WHAT_THE_MAPPING_DOES,
    tags,
    auth,
    body: mappingBody,
    responses: { 200: { description: 'The mapping now in effect', schema: mappingResponse } },
    handler: async ({ body, principal, request }) => {
      const mapping = { scimGroups: [...new Set(body.scimGroups)], samlAttribute: body.samlAttribute, samlValues: [...new Set(body.samlValues)] };
      await setAdminRoleMapping(ctx, commandContextOf(principal, request.id), { mapping });
      return adminRoleMappingOf(ctx.db.slonik, principal.employerId);
    },
  });
};
