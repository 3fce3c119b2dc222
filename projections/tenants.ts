// Read models `employers` and `users`.
import { sql } from 'slonik';
import type { EmployerEvent } from '../src/tenants/employer.ts';
import type { UserEvent } from '../src/tenants/user.ts';
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
            INSERT INTO users (id, employer_id, email, role, user_name, given_name, family_name, display_name, external_id, active, source, version, created_at, updated_at)
            VALUES (${d.userId}, ${d.employerId}, ${d.email}, ${d.role}, ${d.userName}, ${d.givenName}, ${d.familyName}, ${d.displayName},
                    ${d.externalId}, ${d.active}, ${d.source}, ${recorded.streamRevision.toString()}::bigint, ${at}, ${at})`);
          break;
        }
        case 'UserProfileUpdated': {
          const c = event.data.changes;
          const set = (column: string, value: string | null | undefined) =>
            value === undefined ? null : sql.fragment`${sql.identifier([column])} = ${value}`;
          const assignments = [
            set('email', c.email), set('user_name', c.userName), set('given_name', c.givenName),
            set('family_name', c.familyName), set('display_name', c.displayName), set('external_id', c.externalId),
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
