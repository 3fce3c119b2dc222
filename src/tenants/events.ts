// Events of employers (src/tenants/employer.ts), users (src/tenants/user.ts) and e-mail reservations
// (src/tenants/email-reservation.ts). The tenants read model (projections/tenants/) applies the first two.
import type { KeyObject } from 'node:crypto';
import { z } from 'zod';
import { ROLES } from '../auth/principal.ts';
import { openPersonal, sealPersonal } from '../crypto/personal-data.ts';
import { eventSchema, type EventOf } from '../event-store/schemas.ts';

const employerCreated = eventSchema('EmployerCreated', z.object({ employerId: z.string(), name: z.string(), createdAt: z.string() }));

/**
 * Which IdP groups make their members administrators: SCIM groups named by id or displayName
 * (displayName compared without case), and SAML assertions carrying one of `samlValues` in the
 * attribute `samlAttribute` (null: no SAML mapping).
 */
export const adminRoleMapping = z.object({
  scimGroups: z.array(z.string()),
  samlAttribute: z.string().nullable(),
  samlValues: z.array(z.string()),
});
export type AdminRoleMapping = z.infer<typeof adminRoleMapping>;
export const NO_ADMIN_ROLE_MAPPING: AdminRoleMapping = { scimGroups: [], samlAttribute: null, samlValues: [] };

/** How a user came to be, or stopped being, an administrator. */
export const ADMIN_ROLE_SOURCES = ['scim_group', 'saml_attribute', 'deactivation'] as const;
export type AdminRoleSource = (typeof ADMIN_ROLE_SOURCES)[number];

const adminRoleMappingSet = eventSchema('AdminRoleMappingSet', z.object({ employerId: z.string(), mapping: adminRoleMapping }));
/**
 * The employer's administrators as the read model showed them when the employer's stream first
 * needed them (employers whose stream predates the administrator set); later changes are events below.
 */
const administratorsRecorded = eventSchema('AdministratorsRecorded', z.object({ userIds: z.array(z.string()) }));
const administratorAdded = eventSchema('AdministratorAdded', z.object({ userId: z.string(), via: z.enum(ADMIN_ROLE_SOURCES) }));
const administratorRemoved = eventSchema('AdministratorRemoved', z.object({ userId: z.string(), via: z.enum(ADMIN_ROLE_SOURCES) }));
/** The IdP would have removed the last administrator: refused, and recorded for the audit log and the administrators' mail. */
const administratorRemovalRefused = eventSchema('AdministratorRemovalRefused', z.object({ userId: z.string(), via: z.enum(ADMIN_ROLE_SOURCES) }));

/** One SCIM e-mail of a user (RFC 7643 `emails`); `email` below is the one the user signs in with. */
export const userEmail = z.object({ value: z.string(), type: z.string().optional(), primary: z.boolean().optional() });
export type UserEmail = z.infer<typeof userEmail>;

const userPhoneNumber = z.object({ value: z.string(), type: z.string().optional(), primary: z.boolean().optional() });
const userAddress = z.object({
  formatted: z.string().optional(),
  streetAddress: z.string().optional(),
  locality: z.string().optional(),
  region: z.string().optional(),
  postalCode: z.string().optional(),
  country: z.string().optional(),
  type: z.string().optional(),
  primary: z.boolean().optional(),
});
/** The Enterprise User extension (RFC 7643 section 4.3); `manager.value` is the manager's id in the IdP. */
const enterpriseUser = z.object({
  employeeNumber: z.string().optional(),
  costCenter: z.string().optional(),
  organization: z.string().optional(),
  division: z.string().optional(),
  department: z.string().optional(),
  manager: z.object({ value: z.string().optional(), displayName: z.string().optional() }).optional(),
});

/**
 * The SCIM attributes an IdP may send beyond the sign-in profile (RFC 7643 section 4.1, and the
 * Enterprise User extension), kept as sent. Absent in events written before they were kept (and for
 * users from the CLI or SAML); null when SCIM cleared them.
 */
const scimProfileAttributes = {
  middleName: z.string().nullish(),
  formattedName: z.string().nullish(),
  title: z.string().nullish(),
  preferredLanguage: z.string().nullish(),
  locale: z.string().nullish(),
  timezone: z.string().nullish(),
  phoneNumbers: z.array(userPhoneNumber).nullish(),
  addresses: z.array(userAddress).nullish(),
  enterprise: enterpriseUser.nullish(),
};
export const scimProfileAttributesSchema = z.object(scimProfileAttributes);
export type ScimProfileAttributes = z.infer<typeof scimProfileAttributesSchema>;
export const SCIM_PROFILE_ATTRIBUTES = scimProfileAttributesSchema.keyof().options;

const userProfile = z.object({
  email: z.string(),
  userName: z.string(),
  givenName: z.string().nullable(),
  familyName: z.string().nullable(),
  displayName: z.string().nullable(),
  externalId: z.string().nullable(),
  /** Set by SCIM; absent for users from the CLI or SAML, who have their sign-in e-mail only. */
  emails: z.array(userEmail).optional(),
  ...scimProfileAttributes,
});
export type UserProfile = z.infer<typeof userProfile>;

export const USER_SOURCES = ['cli', 'saml', 'scim'] as const;
export type UserSource = (typeof USER_SOURCES)[number];

export const PROFILE_FIELDS = userProfile.keyof().options;
export type ProfileField = (typeof PROFILE_FIELDS)[number];

/**
 * A user's personal fields as an event carries them: `sealed` under the user's data key (AES-256-GCM,
 * src/crypto/personal-data.ts, associated data `userSealContext`), or `clear` in events written before
 * users' data was sealed (version 1, upcast): sealed when written (sealProfileFields), opened when
 * read (openProfileFields). Only ids, role, active flag, source and field names stay outside.
 */
const personalFields = <Shape extends z.ZodType>(shape: Shape) =>
  z.union([z.object({ sealed: z.string().max(100_000) }), z.object({ clear: shape })]);
const sealedProfile = personalFields(userProfile);
const sealedChanges = personalFields(userProfile.partial());
export type PersonalFields = z.infer<typeof sealedProfile> | z.infer<typeof sealedChanges>;

/** Where a user's sealed fields belong: the associated data they are sealed with, so they open nowhere else. */
const userSealContext = (employerId: string, userId: string) => `${employerId}/User/${userId}`;

export function sealProfileFields(fields: Partial<UserProfile>, key: KeyObject, employerId: string, userId: string): string {
  return sealPersonal(fields, key, userSealContext(employerId, userId));
}

/** The fields an event carries; PersonalDataErasedError when they are sealed and the key is gone. */
export function openProfileFields<Fields extends Partial<UserProfile>>(personal: PersonalFields, key: KeyObject | null | undefined, employerId: string, userId: string): Fields {
  return ('clear' in personal ? personal.clear : openPersonal(personal.sealed, key, userSealContext(employerId, userId))) as Fields;
}

/** The user's current profile: its registration's fields with every change applied in order. */
export function openProfile(personal: readonly PersonalFields[], key: KeyObject | null | undefined, employerId: string, userId: string): UserProfile {
  return personal.reduce<UserProfile>((profile, fields) => ({ ...profile, ...openProfileFields(fields, key, employerId, userId) }), {} as UserProfile);
}

const userRegistered = eventSchema('UserRegistered', z.object({
  userId: z.string(),
  employerId: z.string(),
  role: z.enum(ROLES),
  active: z.boolean(),
  source: z.enum(USER_SOURCES),
  personal: sealedProfile,
}), {
  version: 2,
  upcasters: {
    // Version 1 carried the profile in clear, flat.
    1: ({ userId, employerId, role, active, source, ...profile }) => ({ userId, employerId, role, active, source, personal: { clear: profile } }),
  },
});
/** `fields`: the names of the fields changed (the audit log's details), their values sealed in `personal`. */
const userProfileUpdated = eventSchema('UserProfileUpdated', z.object({
  userId: z.string(),
  fields: z.array(z.enum(PROFILE_FIELDS)),
  personal: sealedChanges,
}), {
  version: 2,
  upcasters: {
    1: ({ userId, changes }) => ({ userId, fields: Object.keys(changes as object), personal: { clear: changes } }),
  },
});
/** `scimDeleted`: removed through SCIM DELETE, so SCIM answers 404 for it from now on. */
const userDeactivated = eventSchema('UserDeactivated', z.object({ userId: z.string(), scimDeleted: z.boolean() }));
const userReactivated = eventSchema('UserReactivated', z.object({ userId: z.string() }));
/**
 * The user created an API key: written in the same append as the key's ApiKeyCreated, so the user's
 * stream knows every key to revoke when the user is deactivated, without asking a lagging read model.
 */
/** Written with the employer's AdministratorAdded or AdministratorRemoved, in one append. */
const userRoleChanged = eventSchema('UserRoleChanged', z.object({ userId: z.string(), role: z.enum(ROLES) }));
const userApiKeyCreated = eventSchema('UserApiKeyCreated', z.object({ userId: z.string(), keyId: z.string() }));
/** The user's data key was destroyed (erasure, crypto-shredding): nothing sealed under it opens again. No personal data. */
const userErased = eventSchema('UserErased', z.object({ userId: z.string(), erasedAt: z.string() }));

const emailReserved = eventSchema('EmailReserved', z.object({ emailHash: z.string(), employerId: z.string(), userId: z.string() }));
const emailReleased = eventSchema('EmailReleased', z.object({ emailHash: z.string(), userId: z.string() }));

const employerEvents = [employerCreated, adminRoleMappingSet, administratorsRecorded, administratorAdded, administratorRemoved, administratorRemovalRefused] as const;
const userEvents = [userRegistered, userProfileUpdated, userDeactivated, userReactivated, userRoleChanged, userApiKeyCreated, userErased] as const;
const emailReservationEvents = [emailReserved, emailReleased] as const;
export const tenantEvents = [...employerEvents, ...userEvents, ...emailReservationEvents] as const;

export type EmployerCreated = EventOf<typeof employerCreated>;
export type EmployerEvent = EventOf<(typeof employerEvents)[number]>;
export type AdminRoleMappingSet = EventOf<typeof adminRoleMappingSet>;
export type AdministratorRemovalRefused = EventOf<typeof administratorRemovalRefused>;
export type UserRegistered = EventOf<typeof userRegistered>;
/** A registration with its profile opened: what the users read model's row is made from. */
export type RegisteredUser = Omit<UserRegistered['data'], 'personal'> & UserProfile;
export type UserEvent = EventOf<(typeof userEvents)[number]>;
export type UserDeactivated = EventOf<typeof userDeactivated>;
export type UserReactivated = EventOf<typeof userReactivated>;
export type EmailReservationEvent = EventOf<(typeof emailReservationEvents)[number]>;
