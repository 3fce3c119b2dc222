// Helpers for the tests of administrators from the identity provider (admin-role*.test.ts).
import { eventually } from '../support/eventually.ts';
import type { TestService } from '../support/service.ts';
import { PATCH_OP, USER_SCHEMA, type ScimClient } from '../scim/scim-client.ts';

export async function putMapping(on: TestService, cookie: string, mapping: unknown) {
  return fetch(`${on.url}/api/employer/admin-role-mapping`, {
    method: 'PUT',
    headers: { ...on.sessionHeaders(cookie), 'content-type': 'application/json' },
    body: JSON.stringify(mapping),
  });
}

export async function sessionRole(on: TestService, cookie: string): Promise<string | number> {
  const response = await fetch(`${on.url}/api/auth/session`, { headers: on.sessionHeaders(cookie) });
  return response.status === 200 ? ((await response.json()) as { user: { role: string } }).user.role : response.status;
}

let counter = 0;
export async function scimUser(scim: ScimClient, name: string): Promise<string> {
  counter += 1;
  const email = `${name}.${counter}.${Date.now()}@roles.example`;
  const created = await scim.request('POST', '/Users', { schemas: [USER_SCHEMA], userName: email, emails: [{ value: email, type: 'work', primary: true }], active: true });
  if (created.status !== 201) throw new Error(`SCIM user: ${created.status} ${JSON.stringify(created.body)}`);
  return created.body.id as string;
}

export const memberPatch = (op: 'add' | 'remove', userId: string) => ({
  schemas: [PATCH_OP],
  Operations: op === 'add' ? [{ op: 'add', path: 'members', value: [{ value: userId }] }] : [{ op: 'remove', path: `members[value eq "${userId}"]` }],
});

/**
 * Resolves once the worker has handled the last event of `streamName` (the IdP's latest change): the job
 * dispatcher has passed it and its admin-role job is done.
 */
export async function reactionDone(on: TestService, streamName: string): Promise<boolean> {
  const last = (await on.ctx.eventStore.readStream(streamName)).at(-1)!;
  return eventually(async () => {
    const { rows } = await on.ctx.db.pg.query<{ dispatched: boolean; pending: number }>(
      `SELECT (SELECT (position_commit, position_prepare) >= ($1::bigint, $2::bigint) FROM projection_checkpoints WHERE name = 'job-dispatcher') AS dispatched,
              (SELECT count(*)::int FROM graphile_worker.jobs WHERE key = $3) AS pending`,
      [last.position.commit.toString(), last.position.prepare.toString(), `admin-role-from-groups:${last.eventId}`],
    );
    return rows[0]!.dispatched === true && rows[0]!.pending === 0;
  }, 5000);
}


/**
 * Makes a second administrator of the tenant the way an employer does (a SCIM user in a group mapped
 * to the role), so its first administrator may be deactivated: the IdP never removes the last one.
 */
export async function secondAdministrator(on: TestService, tenant: { employerId: string; cookie: string; scim: ScimClient }): Promise<string> {
  const userId = await scimUser(tenant.scim, 'second.admin');
  const group = await tenant.scim.request('POST', '/Groups', { schemas: ['urn:ietf:params:scim:schemas:core:2.0:Group'], displayName: 'Second administrators', members: [{ value: userId }] });
  if (group.status !== 201) throw new Error(`SCIM group: ${group.status} ${JSON.stringify(group.body)}`);
  const mapped = await putMapping(on, tenant.cookie, { scimGroups: [group.body.id], samlAttribute: null, samlValues: [] });
  if (mapped.status !== 200) throw new Error(`mapping: ${mapped.status} ${await mapped.text()}`);
  const cookie = await on.signIn(tenant.employerId, userId);
  if (!(await eventually(async () => (await sessionRole(on, cookie)) === 'EMPLOYER_ADMIN', 5000))) throw new Error('no second administrator');
  return userId;
}
