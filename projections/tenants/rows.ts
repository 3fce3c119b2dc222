// Rows of the `users` read model as the tenants projection writes them.
import { ERASED } from '../../src/crypto/personal-data.ts';
import { SCIM_PROFILE_ATTRIBUTES, type RegisteredUser, type ScimProfileAttributes, type UserEmail, type UserProfile } from '../../src/tenants/events.ts';

/**
 * The `users` row a registration makes. SCIM answers a POST with it too, rather than reading back what
 * the projection has just written.
 */
export function registeredUserRow(d: RegisteredUser, recorded: { occurredAt: string; revision: bigint }) {
  return {
    id: d.userId, employer_id: d.employerId, email: d.email, role: d.role, user_name: d.userName, given_name: d.givenName,
    family_name: d.familyName, display_name: d.displayName, external_id: d.externalId, active: d.active, source: d.source,
    version: Number(recorded.revision), created_at: recorded.occurredAt, updated_at: recorded.occurredAt,
    emails: scimEmails(d.emails, d.email), work_email: workEmail(d.emails, d.email), scim_attributes: scimAttributesOf(d),
  };
}

/** The SCIM attributes among profile fields (the `scim_attributes` column): those given, null when cleared. */
export function scimAttributesOf(fields: Partial<UserProfile>): ScimProfileAttributes {
  return Object.fromEntries(SCIM_PROFILE_ATTRIBUTES.filter((name) => fields[name] !== undefined).map((name) => [name, fields[name]]));
}

/** The SCIM e-mail list kept for a user: what SCIM sent, else the sign-in e-mail as the work address. */
export function scimEmails(emails: UserEmail[] | undefined, email: string): UserEmail[] {
  return emails && emails.length > 0 ? emails : [{ value: email, type: 'work', primary: true }];
}

export function workEmail(emails: UserEmail[] | undefined, email: string): string | null {
  return scimEmails(emails, email).find((entry) => entry.type?.toLowerCase() === 'work')?.value ?? null;
}

/**
 * What the read model keeps of a user whose data key is destroyed. The address is made unique per
 * user, since addresses are unique among users not deleted (the `users_by_email` index).
 */
export function erasedProfile(userId: string): UserProfile {
  return { email: `${ERASED}:${userId}`, userName: ERASED, givenName: null, familyName: null, displayName: null, externalId: null, emails: [] };
}
