// Events of employers (src/tenants/employer.ts), users (src/tenants/user.ts) and e-mail reservations
// (src/tenants/email-reservation.ts). The tenants read model (projections/tenants/) applies the first two.
import { z } from 'zod';
import { ROLES } from '../auth/principal.ts';
import { eventSchema, type EventOf } from '../event-store/schemas.ts';

const employerCreated = eventSchema('EmployerCreated', z.object({ employerId: z.string(), name: z.string(), createdAt: z.string() }));

/** One SCIM e-mail of a user (RFC 7643 `emails`); `email` below is the one the user signs in with. */
const userEmail = z.object({ value: z.string(), type: z.string().optional(), primary: z.boolean().optional() });
export type UserEmail = z.infer<typeof userEmail>;

const userProfile = z.object({
  email: z.string(),
  userName: z.string(),
  givenName: z.string().nullable(),
  familyName: z.string().nullable(),
  displayName: z.string().nullable(),
  externalId: z.string().nullable(),
  /** Set by SCIM; absent for users from the CLI or SAML, who have their sign-in e-mail only. */
  emails: z.array(userEmail).optional(),
});
export type UserProfile = z.infer<typeof userProfile>;

export const USER_SOURCES = ['cli', 'saml', 'scim'] as const;
export type UserSource = (typeof USER_SOURCES)[number];

const userRegistered = eventSchema('UserRegistered', userProfile.extend({
  userId: z.string(),
  employerId: z.string(),
  role: z.enum(ROLES),
  active: z.boolean(),
  source: z.enum(USER_SOURCES),
}));
const userProfileUpdated = eventSchema('UserProfileUpdated', z.object({ userId: z.string(), changes: userProfile.partial() }));
/** `scimDeleted`: removed through SCIM DELETE, so SCIM answers 404 for it from now on. */
const userDeactivated = eventSchema('UserDeactivated', z.object({ userId: z.string(), scimDeleted: z.boolean() }));
const userReactivated = eventSchema('UserReactivated', z.object({ userId: z.string() }));
/**
 * The user created an API key: written in the same append as the key's ApiKeyCreated, so the user's
 * stream knows every key to revoke when the user is deactivated, without asking a lagging read model.
 */
const userApiKeyCreated = eventSchema('UserApiKeyCreated', z.object({ userId: z.string(), keyId: z.string() }));

const emailReserved = eventSchema('EmailReserved', z.object({ emailHash: z.string(), employerId: z.string(), userId: z.string() }));
const emailReleased = eventSchema('EmailReleased', z.object({ emailHash: z.string(), userId: z.string() }));

const userEvents = [userRegistered, userProfileUpdated, userDeactivated, userReactivated, userApiKeyCreated] as const;
const emailReservationEvents = [emailReserved, emailReleased] as const;
export const tenantEvents = [employerCreated, ...userEvents, ...emailReservationEvents] as const;

export type EmployerCreated = EventOf<typeof employerCreated>;
export type EmployerEvent = EmployerCreated;
export type UserRegistered = EventOf<typeof userRegistered>;
export type UserEvent = EventOf<(typeof userEvents)[number]>;
export type UserDeactivated = EventOf<typeof userDeactivated>;
export type UserReactivated = EventOf<typeof userReactivated>;
export type EmailReservationEvent = EventOf<(typeof emailReservationEvents)[number]>;
