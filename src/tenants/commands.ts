// Commands on employers and users. Registering a user claims its e-mail's reservation stream in the
// same write (appendToStreams), so two employers can never hold the same address, on either event
// store adapter, and a failed registration leaves no claim behind. A new address is also admitted by
// its domain's reservation (src/email-domains/domain-reservation.ts): refused in another employer's. A change to a user is one write
// too: its events, the e-mail claims and, on deactivation, the revocation of the user's API keys.
// A user's personal fields are sealed under the user's data key here, before any decider sees them.
import { randomUUID } from 'node:crypto';
import type { AppContext } from '../app-context.ts';
import { revokeKeyCommands, type ApiKeyState } from '../api-keys/api-key.ts';
import { employerOf, handleCommand, handleCommands, type CommandContext, type CommandDeps } from '../event-store/command-handler.ts';
import { dataKeys, destroyDataKey, ensureDataKey, type PersonalDataKeys } from '../crypto/personal-data.ts';
import { DomainError, fold } from '../event-store/decider.ts';
import { admitAddressCommands } from '../email-domains/domain-reservation.ts';
import type { Position } from '../event-store/port.ts';
import type { Role } from '../auth/principal.ts';
import { adminIdsOf } from '../../projections/tenants/queries.ts';
import { recordAdministratorRemovalRefused } from './admin-role.ts';
import { employerDecider, employerStream } from './employer.ts';
import { emailHash, emailReservationDecider, emailReservationStream } from './email-reservation.ts';
import { openProfile, sealProfileFields, type ProfileField, type RegisteredUser, type UserEvent, type UserProfile, type UserSource } from './events.ts';
import { profileChanges, userDecider, userStream, type UserState } from './user.ts';

/** The tenants' user commands seal personal data: they need the data keys' table and ENCRYPTION_KEY. */
export type UserCommandDeps = CommandDeps & { personalData: PersonalDataKeys };

export function newEmployerId(): string {
  return `emp_${randomUUID().replaceAll('-', '')}`;
}

/** `context` names who acts; its tenantId is not read, since the employer's id is minted here. */
export async function createEmployer(ctx: AppContext, context: CommandContext, input: { name: string; adminEmail: string; adminGivenName?: string | undefined; adminFamilyName?: string | undefined }) {
  const employerId = newEmployerId();
  const deps = ctx.commands;
  const employerContext: CommandContext = { ...context, tenantId: employerId };
  await handleCommand(deps, {
    streamName: employerStream(employerId),
    decider: employerDecider,
    command: { type: 'CreateEmployer', employerId, name: input.name, now: new Date().toISOString() },
    context: employerContext,
    newStream: true,
  });
  const admin = await registerUser(deps, employerContext, {
    employerId,
    role: 'EMPLOYER_ADMIN',
    profile: {
      email: input.adminEmail,
      userName: input.adminEmail,
      givenName: input.adminGivenName ?? null,
      familyName: input.adminFamilyName ?? null,
      displayName: null,
      externalId: null,
    },
    active: true,
    source: 'cli',
  });
  return { employerId, adminUserId: admin.userId };
}

/**
 * Registers a user with a data key of its own (created here, kept if the registration is refused:
 * it seals nothing), its profile sealed under it in the UserRegistered event.
 */
export async function registerUser(
  deps: UserCommandDeps,
  context: CommandContext,
  input: { employerId: string; role: Role; profile: UserProfile; active: boolean; source: UserSource; userId?: string },
): Promise<{ userId: string; position: Position | null; registered: { user: RegisteredUser; occurredAt: string } }> {
  const userId = input.userId ?? randomUUID();
  const { employerId, role, profile, active, source } = input;
  const key = await ensureDataKey(deps.personalData.db, deps.personalData.encryptionKey, employerId, userId);
  if (!key) throw personalDataErased();
  const { position, occurredAt } = await handleCommands(deps, [
    reserveEmail(context, profile.email, employerId, userId),
    ...admitAddressCommands(context, profile.email, employerId),
    {
      streamName: userStream(employerId, userId),
      decider: userDecider,
      command: { type: 'RegisterUser', userId, employerId, role, sealed: sealProfileFields(profile, key, employerId, userId), active, source },
      context,
      newStream: input.userId === undefined,
    },
  ]);
  return { userId, position, registered: { user: { userId, employerId, role, active, source, ...profile }, occurredAt } };
}

/** A user as its stream holds it, its profile opened with its data key. */
export type ExistingUser = Exclude<UserState, { status: 'absent' }> & { profile: UserProfile };

const personalDataErased = () => new DomainError('gone', 'GONE', 'The personal data of this user has been erased.');

/**
 * What a change brings the user to: a profile and active flag (SCIM PUT/PATCH), or deletion (SCIM
 * DELETE: deactivated for good and its e-mail released, since a deleted resource must not stand in
 * the way of a new one, RFC 7644 section 3.6).
 */
export type UserTarget = { profile: UserProfile; active: boolean } | { delete: true };

const MAX_CHANGE_ATTEMPTS = 5;

/**
 * Changes a user in one append, all of it or nothing: the user's events, the new e-mail's claim and
 * the old one's release, and, when the user ends up inactive, the revocation of every API key the
 * user created (their ids are in the user's stream, so a key created a moment before is included)
 * and, for an administrator, its removal from the employer's administrators (refused with 409
 * LAST_ADMINISTRATOR for the last one, the refusal recorded).
 * `target` is computed from the user's state at the revision the append is pinned to; `precondition`
 * (If-Match) is checked against that revision, and a mismatch is 412 PRECONDITION_FAILED. Without a
 * precondition, a concurrent write makes the change start over from the new state.
 * Returns the hashes of the keys it revoked, so the caller's process can forget them at once.
 */
export async function changeUser(
  deps: UserCommandDeps,
  context: CommandContext,
  employerId: string,
  userId: string,
  target: (user: ExistingUser) => UserTarget | Promise<UserTarget>,
  precondition?: (revision: bigint) => boolean,
): Promise<{ position: Position | null; revokedKeyHashes: string[] }> {
  const streamName = userStream(employerId, userId);
  for (let attempt = 1; ; attempt++) {
    const history = (await deps.eventStore.readStream(streamName)) as unknown as UserEvent[];
    const state = fold(userDecider, history);
    if (state.status === 'absent') throw new DomainError('not_found', 'NOT_FOUND', 'The user was not found.');
    const revision = BigInt(history.length - 1);
    if (precondition && !precondition(revision)) throw new DomainError('precondition_failed', 'PRECONDITION_FAILED', 'The user changed since the version in If-Match.');
    // Users registered before their data was sealed get their key on their first change.
    const key = await ensureDataKey(deps.personalData.db, deps.personalData.encryptionKey, employerId, userId);
    if (!key) throw personalDataErased();
    const user: ExistingUser = { ...state, profile: openProfile(state.personal, key, employerId, userId) };
    const wanted = await target(user);
    const changes = 'delete' in wanted ? {} : profileChanges(user.profile, wanted.profile);
    const fields = Object.keys(changes) as ProfileField[];
    const sealedChanges = fields.length === 0 ? null : { fields, sealed: sealProfileFields(changes, key, employerId, userId) };
    const userCommand = {
      streamName,
      decider: userDecider,
      command: 'delete' in wanted ? ({ type: 'DeactivateUser', scimDelete: true } as const) : ({ type: 'ChangeUser', changes: sealedChanges, active: wanted.active } as const),
      context,
      // Decided on the state at `revision`: a concurrent write makes it start over (or 412).
      precondition: (current: bigint) => current === revision,
    };
    const newEmail = 'delete' in wanted || wanted.profile.email.toLowerCase() === user.profile.email.toLowerCase() ? null : wanted.profile.email;
    const emailCommands = 'delete' in wanted
      ? [releaseEmail(context, user.profile.email, userId)]
      : newEmail ? [reserveEmail(context, newEmail, employerId, userId), ...admitAddressCommands(context, newEmail, employerId), releaseEmail(context, user.profile.email, userId)] : [];
    const deactivates = 'delete' in wanted || !wanted.active;
    const revocations = deactivates ? revokeKeyCommands(context, employerId, user.apiKeyIds, new Date().toISOString()) : [];
    // Deactivating an administrator removes it from the employer's administrators: refused for the last one.
    const administratorRemovals = deactivates && user.role === 'EMPLOYER_ADMIN'
      ? [{
          streamName: employerStream(employerId),
          decider: employerDecider,
          command: { type: 'RemoveAdministrator', userId, via: 'deactivation', knownAdministrators: await adminIdsOf(deps.personalData.db, employerId) } as const,
          context,
        }]
      : [];
    try {
      const { results, position } = await handleCommands(deps, [userCommand, ...emailCommands, ...administratorRemovals, ...revocations]);
      const revokedKeyHashes = results.slice(1 + emailCommands.length + administratorRemovals.length).flatMap(({ newEvents, state }) => {
        const key = state as ApiKeyState;
        return newEvents.length > 0 && key.status !== 'absent' ? [key.keyHash] : [];
      });
      return { position, revokedKeyHashes };
    } catch (error) {
      const moved = error instanceof DomainError && error.code === 'PRECONDITION_FAILED';
      if (moved && !precondition && attempt < MAX_CHANGE_ATTEMPTS) continue;
      if (error instanceof DomainError && error.code === 'LAST_ADMINISTRATOR') await recordAdministratorRemovalRefused(deps, context, { userId, via: 'deactivation' });
      throw error;
    }
  }
}

/**
 * Erases a deactivated user's personal data, as patients' erasure does: the data key is destroyed
 * first (from then on nothing sealed under it opens, in the log, backups or replays), then UserErased
 * is appended with the release of the user's e-mail claim (a SCIM-deleted user's is released
 * already); the tenants projection clears the profile from `users`. 409 USER_ACTIVE for an active
 * user; repeated, it answers the same. Events written before profiles were sealed hold them in clear
 * and cannot be shredded.
 */
export async function eraseUser(ctx: AppContext, context: CommandContext, input: { userId: string }): Promise<{ userId: string; erasedAt: string }> {
  const employerId = employerOf(context);
  const { userId } = input;
  const { personalData } = ctx.commands;
  const streamName = userStream(employerId, userId);
  const state = fold(userDecider, (await ctx.eventStore.readStream(streamName)) as unknown as UserEvent[]);
  if (state.status === 'absent') throw new DomainError('not_found', 'NOT_FOUND', 'The user was not found.');
  // Refused before the key is destroyed: the decider refuses it too, but by then the key would be gone.
  if (state.status === 'active') throw new DomainError('conflict', 'USER_ACTIVE', 'Only a deactivated user can be erased: deactivate the user first.');
  const key = (await dataKeys(personalData.db, personalData.encryptionKey, employerId, [userId])).get(userId);
  // The address is needed to find its claim: opened before the key goes (a retry after the key went finds it erased).
  const email = state.scimDeleted || state.erased || key === null ? null : openProfile(state.personal, key, employerId, userId).email;
  const erasedAt = await destroyDataKey(personalData.db, employerId, userId);
  await handleCommands(ctx.commands, [
    { streamName, decider: userDecider, command: { type: 'EraseUser', erasedAt }, context },
    ...(email === null ? [] : [releaseEmail(context, email, userId)]),
  ]);
  return { userId, erasedAt };
}

function reserveEmail(context: CommandContext, email: string, employerId: string, userId: string) {
  const hash = emailHash(email);
  return {
    streamName: emailReservationStream(hash),
    decider: emailReservationDecider,
    command: { type: 'ReserveEmail', emailHash: hash, employerId, userId } as const,
    context: { ...context, tenantId: null },
    // Most addresses have never been reserved: try that first; a taken one is read and decided on retry.
    newStream: true,
  };
}

function releaseEmail(context: CommandContext, email: string, userId: string) {
  const hash = emailHash(email);
  return {
    streamName: emailReservationStream(hash),
    decider: emailReservationDecider,
    command: { type: 'ReleaseEmail', emailHash: hash, userId } as const,
    context: { ...context, tenantId: null },
  };
}
