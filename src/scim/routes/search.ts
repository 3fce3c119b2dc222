// POST /.search at the SCIM root (RFC 7644 section 3.4.3): one list over Users then Groups, paged as
// one sequence. A resource type whose attributes the filter does not know is left out of the search
// (`userName eq "x"` finds users only); a filter neither type knows is refused as GET refuses it.
import type { ListQuery } from '../../../projections/scim-list-page.ts';
import { scimListResponse, SCIM_MAX_RESULTS } from '../discovery.ts';
import { ScimError } from '../errors.ts';
import { scimFilterToSql, type ScimAttributeMap } from '../filter.ts';
import { GROUP_FILTER_ATTRIBUTES, USER_FILTER_ATTRIBUTES } from '../resources.ts';
import { scimGroupPage } from './groups.ts';
import { callerOf, searchRequestSchema, send, type ListRequest, type ScimRouting } from './scim-route.ts';
import { scimUserPage } from './users.ts';

export function rootSearchRoutes({ ctx, baseUrl, route }: ScimRouting): void {
  route({
    method: 'POST',
    url: '/.search',
    summary: 'Search Users and Groups together with a SearchRequest body (RFC 7644 section 3.4.3): users first, then groups',
    body: searchRequestSchema,
    handler: async ({ body, request, reply }) => {
      const employerId = callerOf(request).employerId;
      const [userFilter, groupFilter] = filtersOf(body, [USER_FILTER_ATTRIBUTES, GROUP_FILTER_ATTRIBUTES]);
      const startIndex = Math.max(1, body.startIndex);
      const count = Math.max(0, Math.min(body.count, SCIM_MAX_RESULTS));
      const users = userFilter === undefined
        ? { totalResults: 0, resources: [] }
        : await scimUserPage(ctx, baseUrl, employerId, { filter: userFilter, startIndex, count }, body);
      // The groups' part of the page starts where the users end.
      const groups = groupFilter === undefined
        ? { totalResults: 0, resources: [] }
        : await scimGroupPage(ctx, baseUrl, employerId, { filter: groupFilter, startIndex: Math.max(1, startIndex - users.totalResults), count: count - users.resources.length }, body);
      return send(reply, 200, scimListResponse([...users.resources, ...groups.resources], { totalResults: users.totalResults + groups.totalResults, startIndex }));
    },
  });
}

/** The filter in SQL for each resource type, undefined for a type it names unknown attributes of. */
function filtersOf(list: ListRequest, types: ScimAttributeMap[]): (ListQuery['filter'] | undefined)[] {
  const { filter } = list;
  if (filter === undefined) return types.map(() => null);
  const errors: ScimError[] = [];
  const translated = types.map((attributes) => {
    try {
      return scimFilterToSql(filter, attributes);
    } catch (error) {
      if (!(error instanceof ScimError)) throw error;
      errors.push(error);
      return undefined;
    }
  });
  if (errors.length === types.length) throw errors[0]!;
  return translated;
}
