// Events of employers (src/tenants/employer.ts), users (src/tenants/user.ts) and e-mail reservations
// (src/tenants/email-reservation.ts). The tenants read model (projections/tenants/) applies the first two.
import type { Role } from '../auth/principal.ts';
import type { DomainEvent } from '../event-store/decider.ts';

export type EmployerCreated = DomainEvent<'EmployerCreated', { employerId: string; name: string; createdAt: string }>;
export type EmployerEvent = EmployerCreated;

/** One SCIM e-mail of a user (RFC 7643 `emails`); `email` above is the one the user signs in with. */
export type UserEmail = { value: string; type?: string; primary?: boolean };

export type UserProfile = {
  email: string;
  userName: string;
  givenName: string | null;
  familyName: string | null;
  displayName: string | null;
  externalId: string | null;
  /** Set by SCIM; absent for users from the CLI or SAML, who have their sign-in e-mail only. */
  emails?: UserEmail[];
};

export type UserSource = 'cli' | 'saml' | 'scim';

export type UserRegistered = DomainEvent<'UserRegistered', UserProfile & { userId: string; employerId: string; role: Role; active: boolean; source: UserSource }>;
export type UserProfileUpdated = DomainEvent<'UserProfileUpdated', { userId: string; changes: Partial<UserProfile> }>;
/** `scimDeleted`: removed through SCIM DELETE, so SCIM answers 404 for it from now on. */
export type UserDeactivated = DomainEvent<'UserDeactivated', { userId: string; scimDeleted: boolean }>;
export type UserReactivated = DomainEvent<'UserReactivated', { userId: string }>;
/**
 * The user created an API key: written in the same append as the key's ApiKeyCreated, so the user's
 * stream knows every key to revoke when the user is deactivated, without asking a lagging read model.
 */
export type UserApiKeyCreated = DomainEvent<'UserApiKeyCreated', { userId: string; keyId: string }>;
export type UserEvent = UserRegistered | UserProfileUpdated | UserDeactivated | UserReactivated | UserApiKeyCreated;

export type EmailReserved = DomainEvent<'EmailReserved', { emailHash: string; employerId: string; userId: string }>;
export type EmailReleased = DomainEvent<'EmailReleased', { emailHash: string; userId: string }>;
export type EmailReservationEvent = EmailReserved | EmailReleased;
