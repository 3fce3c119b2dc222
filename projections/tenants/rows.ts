// Rows of the `users` read model as the tenants projection writes them.
import type { RegisteredUser, UserEmail } from '../../src/tenants/events.ts';

/**
 * The `users` row a registration makes. SCIM answers a POST with it too, rather than reading back what
 * the projection has just written.
 */
export function registeredUserRow(d: RegisteredUser, recorded: { occurredAt: string; revision: bigint }) {
  return {
    id: d.userId, employer_id: d.employerId, email: d.email, role: d.role, user_name: d.userName, given_name: d.givenName,
    family_name: d.familyName, display_name: d.displayName, external_id: d.externalId, active: d.active, source: d.source,
    version: Number(recorded.revision), created_at: recorded.occurredAt, updated_at: recorded.occurredAt,
    emails: scimEmails(d.emails, d.email), work_email: workEmail(d.emails, d.email),
  };
}

/** The SCIM e-mail list kept for a user: what SCIM sent, else the sign-in e-mail as the work address. */
export function scimEmails(emails: UserEmail[] | undefined, email: string): UserEmail[] {
  return emails && emails.length > 0 ? emails : [{ value: email, type: 'work', primary: true }];
}

export function workEmail(emails: UserEmail[] | undefined, email: string): string | null {
  return scimEmails(emails, email).find((entry) => entry.type?.toLowerCase() === 'work')?.value ?? null;
}
