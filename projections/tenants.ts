// Read models `employers` and `users`.
import { sql } from 'slonik';
import type { EmployerEvent } from '../src/tenants/employer.ts';
import type { UserEmail, UserEvent } from '../src/tenants/user.ts';
import type { Projection } from './projection.ts';

export const tenantsProjection: Projection = {
  name: 'tenants',
  tables: ['employers', 'users'],
  eventTypes: ['EmployerCreated', 'UserRegistered', 'UserProfileUpdated', 'UserDeactivated', 'UserReactivated'],
  awaitedByCommands: true,
  async apply(tx, events) {
    for (const recorded of events) {
      const event = recorded as unknown as EmployerEvent | UserEvent;
      const at = recorded.metadata.occurredAt;
      switch (event.type) {
        case 'EmployerCreated':
          await tx.query(sql.unsafe`INSERT INTO employers (id, name, created_at) VALUES (${event.data.employerId}, ${event.data.name}, ${event.data.createdAt})`);
          break;
        case 'UserRegistered': {
          const d = event.data;
          await tx.query(sql.unsafe`
            INSERT INTO users (id, employer_id, email, role, user_name, given_name, family_name, display_name, external_id, active, source, version,
                               created_at, updated_at, emails, work_email)
            VALUES (${d.userId}, ${d.employerId}, ${d.email}, ${d.role}, ${d.userName}, ${d.givenName}, ${d.familyName}, ${d.displayName},
                    ${d.externalId}, ${d.active}, ${d.source}, ${recorded.streamRevision.toString()}::bigint, ${at}, ${at},
                    ${sql.jsonb(scimEmails(d.emails, d.email))}, ${workEmail(d.emails, d.email)})`);
          break;
        }
        case 'UserProfileUpdated': {
          const c = event.data.changes;
          const set = (column: string, value: string | null | undefined) =>
            value === undefined ? null : sql.fragment`${sql.identifier([column])} = ${value}`;
          const assignments = [
            set('email', c.email), set('user_name', c.userName), set('given_name', c.givenName),
            set('family_name', c.familyName), set('display_name', c.displayName), set('external_id', c.externalId),
            ...emailListAssignments(c.emails, c.email),
          ].filter((fragment) => fragment !== null);
          await tx.query(sql.unsafe`
            UPDATE users SET ${sql.join([...assignments, sql.fragment`version = ${recorded.streamRevision.toString()}::bigint`, sql.fragment`updated_at = ${at}`], sql.fragment`, `)}
            WHERE id = ${event.data.userId}`);
          break;
        }
        case 'UserDeactivated':
          await tx.query(sql.unsafe`
            UPDATE users SET active = false, scim_deleted = scim_deleted OR ${event.data.scimDeleted},
              version = ${recorded.streamRevision.toString()}::bigint, updated_at = ${at}
            WHERE id = ${event.data.userId}`);
          break;
        case 'UserReactivated':
          await tx.query(sql.unsafe`
            UPDATE users SET active = true, version = ${recorded.streamRevision.toString()}::bigint, updated_at = ${at} WHERE id = ${event.data.userId}`);
          break;
      }
    }
  },
};

/** The SCIM e-mail list kept for a user: what SCIM sent, else the sign-in e-mail as the work address. */
function scimEmails(emails: UserEmail[] | undefined, email: string): UserEmail[] {
  return emails && emails.length > 0 ? emails : [{ value: email, type: 'work', primary: true }];
}

function workEmail(emails: UserEmail[] | undefined, email: string): string | null {
  return scimEmails(emails, email).find((entry) => entry.type?.toLowerCase() === 'work')?.value ?? null;
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
