// Users' personal fields in and out of their events: sealed under the user's own data key
// (src/crypto/personal-data.ts, subject = the user id) when written, opened when read; events written
// before users' data was sealed carry them in clear (`clear`, see events.ts) and open without a key.
import type { KeyObject } from 'node:crypto';
import { ERASED, openPersonal, sealPersonal } from '../crypto/personal-data.ts';
import { userSealContext, type PersonalFields, type UserProfile } from './events.ts';

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

/**
 * What the read model keeps of a user whose data key is destroyed. The address is made unique per
 * user, since addresses are unique among users not deleted (the `users_by_email` index).
 */
export function erasedProfile(userId: string): UserProfile {
  return { email: `${ERASED}:${userId}`, userName: ERASED, givenName: null, familyName: null, displayName: null, externalId: null, emails: [] };
}
