// Read models `employers` and `users`. `users` keeps users' personal fields in clear (SCIM filters,
// SAML and sign-in links look users up by them), opened with each user's data key; a user whose key
// is destroyed is written with those fields erased.
import type { KeyObject } from 'node:crypto';
import { sql, type DatabaseTransactionConnection } from 'slonik';
import { dataKeys } from '../../src/crypto/personal-data.ts';
import type { RecordedEvent } from '../../src/event-store/port.ts';
import { defineProjection, isRunOf, rowsAsJson, runsOfSameType } from '../../src/event-store/projection.ts';
import { openProfileFields, type AdminRoleMappingSet, type EmployerCreated, type ScimProfileAttributes, type UserEmail, type UserEvent, type UserProfile, type UserRegistered } from '../../src/tenants/events.ts';
import { erasedProfile, registeredUserRow, scimAttributesOf, scimEmails, workEmail } from './rows.ts';

type Keys = Map<string, KeyObject | null>;

export function tenantsProjection(encryptionKey: KeyObject) {
  return defineProjection<EmployerCreated | AdminRoleMappingSet | UserEvent>({
    name: 'tenants',
    tables: ['employers', 'users'],
    eventTypes: ['EmployerCreated', 'AdminRoleMappingSet', 'UserRegistered', 'UserProfileUpdated', 'UserDeactivated', 'UserReactivated', 'UserRoleChanged', 'UserApiKeyCreated', 'UserErased'],
    awaitedByCommands: true,
    async apply(tx, events) {
      const keys = await userKeys(tx, encryptionKey, events);
      // Registrations dominate replays (a rebuild, an import): each run of them is one INSERT, and each
      // run of status, role or key changes one UPDATE. Profile updates, each its own set of columns, go one by one.
      for (const run of runsOfSameType(events)) {
        if (isRunOf(run, 'EmployerCreated')) await insertEmployers(tx, run);
        else if (isRunOf(run, 'UserRegistered')) await insertUsers(tx, run, keys);
        else if (isRunOf(run, 'UserDeactivated') || isRunOf(run, 'UserReactivated') || isRunOf(run, 'UserRoleChanged') || isRunOf(run, 'UserApiKeyCreated')) {
          await updateUsers(tx, run);
        } else for (const event of run) await applyUserChange(tx, event, keys);
      }
    },
  });
}

/** The data keys of the users whose sealed fields are in the batch, one query per employer, by `employer/user`. */
async function userKeys(tx: DatabaseTransactionConnection, encryptionKey: KeyObject, events: readonly RecordedEvent<EmployerCreated | AdminRoleMappingSet | UserEvent>[]): Promise<Keys> {
  const usersByEmployer = new Map<string, Set<string>>();
  for (const event of events) {
    if ((event.type !== 'UserRegistered' && event.type !== 'UserProfileUpdated') || !('sealed' in event.data.personal)) continue;
    const employerId = event.metadata.tenantId!;
    if (!usersByEmployer.has(employerId)) usersByEmployer.set(employerId, new Set());
    usersByEmployer.get(employerId)!.add(event.data.userId);
  }
  const keys: Keys = new Map();
  for (const [employerId, users] of usersByEmployer) {
    for (const [userId, key] of await dataKeys(tx, encryptionKey, employerId, [...users])) keys.set(`${employerId}/${userId}`, key);
  }
  return keys;
}

/** The profile fields an event carries, in clear; every field erased when the user's key is destroyed. */
function openedFields<Fields extends Partial<UserProfile>>(event: RecordedEvent<UserEvent>, keys: Keys): Fields | null {
  if (event.type !== 'UserRegistered' && event.type !== 'UserProfileUpdated') return null;
  const employerId = event.metadata.tenantId!;
  const { userId, personal } = event.data;
  const key = keys.get(`${employerId}/${userId}`);
  if ('sealed' in personal && key === null) return erasedProfile(userId) as Fields;
  return openProfileFields<Fields>(personal, key, employerId, userId);
}

async function insertEmployers(tx: DatabaseTransactionConnection, run: RecordedEvent<EmployerCreated>[]) {
  const rows = run.map(({ data }) => ({ id: data.employerId, name: data.name, created_at: data.createdAt }));
  await tx.query(sql.unsafe`
    INSERT INTO employers (id, name, created_at)
    SELECT id, name, created_at FROM json_to_recordset(${rowsAsJson(rows)}::json) AS r(id text, name text, created_at timestamptz)`);
}

async function insertUsers(tx: DatabaseTransactionConnection, run: RecordedEvent<UserRegistered>[], keys: Keys) {
  const rows = run.map((event) => {
    const { personal: _personal, ...registration } = event.data;
    const profile = openedFields<UserProfile>(event, keys)!;
    return registeredUserRow({ ...registration, ...profile }, { occurredAt: event.metadata.occurredAt, revision: event.streamRevision });
  });
  await tx.query(sql.unsafe`
    INSERT INTO users (id, employer_id, email, role, user_name, given_name, family_name, display_name, external_id, active, source, version,
                       created_at, updated_at, emails, work_email, scim_attributes)
    SELECT id, employer_id, email, role, user_name, given_name, family_name, display_name, external_id, active, source, version,
           created_at, updated_at, emails, work_email, scim_attributes
    FROM json_to_recordset(${rowsAsJson(rows)}::json) AS r(id text, employer_id text, email text, role text, user_name text, given_name text,
      family_name text, display_name text, external_id text, active boolean, source text, version bigint, created_at timestamptz,
      updated_at timestamptz, emails jsonb, work_email text, scim_attributes jsonb)`);
}

type UserColumnChange = Extract<UserEvent, { type: 'UserDeactivated' | 'UserReactivated' | 'UserRoleChanged' | 'UserApiKeyCreated' }>;

/** What each of these events sets, from the folded row `r` (users `u`). */
const userColumnAssignments = {
  UserDeactivated: sql.fragment`active = false, scim_deleted = u.scim_deleted OR r.scim_deleted, version = r.version, updated_at = r.updated_at`,
  UserReactivated: sql.fragment`active = true, version = r.version, updated_at = r.updated_at`,
  UserRoleChanged: sql.fragment`role = r.role, version = r.version, updated_at = r.updated_at`,
  // Nothing a reader sees changes, but the version is the stream's revision: SCIM's ETag and If-Match.
  UserApiKeyCreated: sql.fragment`version = r.version`,
} satisfies Record<UserColumnChange['type'], unknown>;

/**
 * A run of one of these event types as one UPDATE: the events of each user folded into one row first
 * (an UPDATE ... FROM takes one source row per target row), the last one's revision, time and role,
 * and scim_deleted once any of them set it. The same rows as applying them one by one.
 */
async function updateUsers(tx: DatabaseTransactionConnection, run: RecordedEvent<UserColumnChange>[]) {
  const folded = new Map<string, { id: string; version: number; updated_at: string; role: string | null; scim_deleted: boolean }>();
  for (const { data, streamRevision, metadata } of run) {
    folded.set(data.userId, {
      id: data.userId,
      version: Number(streamRevision),
      updated_at: metadata.occurredAt,
      role: 'role' in data ? data.role : null,
      scim_deleted: Boolean(folded.get(data.userId)?.scim_deleted) || ('scimDeleted' in data && data.scimDeleted),
    });
  }
  await tx.query(sql.unsafe`
    UPDATE users u SET ${userColumnAssignments[run[0]!.type]}
    FROM json_to_recordset(${rowsAsJson([...folded.values()])}::json) AS r(id text, version bigint, updated_at timestamptz, role text, scim_deleted boolean)
    WHERE u.id = r.id`);
}

async function applyUserChange(tx: DatabaseTransactionConnection, event: RecordedEvent<EmployerCreated | AdminRoleMappingSet | UserEvent>, keys: Keys) {
  const at = event.metadata.occurredAt;
  switch (event.type) {
    case 'UserProfileUpdated': {
      const c = openedFields<Partial<UserProfile>>(event, keys)!;
      const set = (column: string, value: string | null | undefined) =>
        value === undefined ? null : sql.fragment`${sql.identifier([column])} = ${value}`;
      const assignments = [
        set('email', c.email), set('user_name', c.userName), set('given_name', c.givenName),
        set('family_name', c.familyName), set('display_name', c.displayName), set('external_id', c.externalId),
        ...emailListAssignments(c.emails, c.email),
        scimAttributesAssignment(scimAttributesOf(c)),
      ].filter((fragment) => fragment !== null);
      await tx.query(sql.unsafe`
        UPDATE users SET ${sql.join([...assignments, sql.fragment`version = ${event.streamRevision.toString()}::bigint`, sql.fragment`updated_at = ${at}`], sql.fragment`, `)}
        WHERE id = ${event.data.userId}`);
      break;
    }
    case 'AdminRoleMappingSet':
      await tx.query(sql.unsafe`UPDATE employers SET admin_role_mapping = ${sql.jsonb(event.data.mapping)} WHERE id = ${event.data.employerId}`);
      break;
    case 'UserErased': {
      // What a rebuild writes once the key is gone (erasedProfile), and no SCIM attribute kept.
      const erased = erasedProfile(event.data.userId);
      await tx.query(sql.unsafe`
        UPDATE users SET email = ${erased.email}, user_name = ${erased.userName}, given_name = NULL, family_name = NULL, display_name = NULL,
          external_id = NULL, emails = '[]'::jsonb, work_email = NULL, scim_attributes = '{}'::jsonb,
          version = ${event.streamRevision.toString()}::bigint, updated_at = ${at}
        WHERE id = ${event.data.userId}`);
      break;
    }
  }
}

/** The SCIM attributes an update gives replace those kept; a cleared one is kept as null. */
function scimAttributesAssignment(changed: ScimProfileAttributes) {
  return Object.keys(changed).length === 0 ? null : sql.fragment`scim_attributes = scim_attributes || ${sql.jsonb(changed)}`;
}

function emailListAssignments(emails: UserEmail[] | undefined, email: string | undefined) {
  if (emails !== undefined && emails.length > 0) {
    return [sql.fragment`emails = ${sql.jsonb(emails)}`, sql.fragment`work_email = ${workEmail(emails, '')}`];
  }
  if (emails === undefined && email === undefined) return [];
  // No list (SCIM cleared it, or the sign-in e-mail changed outside SCIM): the sign-in e-mail stands alone.
  if (email !== undefined) return [sql.fragment`emails = ${sql.jsonb(scimEmails(undefined, email))}`, sql.fragment`work_email = ${email}`];
  return [sql.fragment`emails = jsonb_build_array(jsonb_build_object('value', email, 'type', 'work', 'primary', true))`, sql.fragment`work_email = email`];
}
