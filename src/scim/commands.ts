// SCIM writes: users through the tenants capability's user aggregate, groups through the group
// aggregate. Every command names the employer of the SCIM token, and every stream it touches is that
// employer's, so an id of another employer is simply absent (404). Domain errors become SCIM errors.
// Each function returns once SCIM's read models show its writes (read-your-writes.ts).
import { randomUUID } from 'node:crypto';
import { isUserNameTaken, unknownUserIds, type ScimUserRow } from '../../projections/scim-groups/queries.ts';
import { registeredUserRow } from '../../projections/tenants/rows.ts';
import type { AppContext } from '../app-context.ts';
import { revokeKeysCreatedBy } from '../api-keys/commands.ts';
import { handleCommand, type CommandContext } from '../event-store/command-handler.ts';
import { DomainError } from '../event-store/decider.ts';
import { endUserSessions } from '../identity/commands.ts';
import { deleteUser, registerUser, setUserActive, updateUserProfile } from '../tenants/commands.ts';
import type { UserProfile } from '../tenants/events.ts';
import { userStream } from '../tenants/user.ts';
import type { ScimGroupDoc, ScimUserDoc } from './attributes.ts';
import { ScimError } from './errors.ts';
import { groupDecider, groupStream, type GroupCommand } from './group.ts';
import type { ScimWriter } from './read-your-writes.ts';

/** Who is calling: the employer and id of the SCIM token that authenticated the request. */
export type ScimCaller = { employerId: string; tokenId: string };

function contextOf(caller: ScimCaller): CommandContext {
  return { tenantId: caller.employerId, actor: { type: 'scimToken', id: caller.tokenId } };
}

/**
 * POST /Users: a PATIENT user of the caller's employer. Returns the new user as the users read model
 * holds it (the row the tenants projection writes for the registration).
 */
export async function provisionScimUser(ctx: AppContext, writer: ScimWriter, caller: ScimCaller, doc: ScimUserDoc): Promise<ScimUserRow> {
  await assertUserNameFree(ctx, caller.employerId, doc.userName, null);
  const { position, registered } = await withScimErrors(() =>
    registerUser(writer.deps, contextOf(caller), {
      employerId: caller.employerId,
      role: 'PATIENT',
      profile: profileOf(doc),
      active: doc.active,
      source: 'scim',
    }),
  );
  if (position) await writer.awaitReadModels(position);
  // A registration is the first event of its stream: revision 0.
  return registeredUserRow(registered.event.data, { occurredAt: registered.occurredAt, revision: 0n });
}

/**
 * PUT, or PATCH once applied: brings the user to `doc`. Deactivation (active false) also revokes the
 * API keys the user created and ends the user's sessions.
 */
export async function updateScimUser(ctx: AppContext, writer: ScimWriter, caller: ScimCaller, current: ScimUserRow, doc: ScimUserDoc): Promise<void> {
  const context = contextOf(caller);
  if (doc.userName.toLowerCase() !== current.user_name.toLowerCase()) await assertUserNameFree(ctx, caller.employerId, doc.userName, current.id);
  const profile = profileOf(doc);
  const currentProfile: UserProfile = {
    email: current.email,
    userName: current.user_name,
    givenName: current.given_name,
    familyName: current.family_name,
    displayName: current.display_name,
    externalId: current.external_id,
    emails: current.emails,
  };
  await withScimErrors(() => updateUserProfile(writer.deps, context, caller.employerId, current.id, currentProfile, profile));
  if (doc.active && !current.active) await withScimErrors(() => setUserActive(writer.deps, context, caller.employerId, current.id, true));
  if (!doc.active) {
    await withScimErrors(() => setUserActive(writer.deps, context, caller.employerId, current.id, false));
    await endAccess(ctx, caller, current.id);
  }
  await writer.awaitStream(userStream(caller.employerId, current.id));
}

/** DELETE /Users/{id}: deactivated, hidden from SCIM (404 from now on) and its e-mail freed, but kept. */
export async function deleteScimUser(ctx: AppContext, writer: ScimWriter, caller: ScimCaller, current: ScimUserRow): Promise<void> {
  await withScimErrors(() => deleteUser(writer.deps, contextOf(caller), caller.employerId, current.id, current.email));
  await endAccess(ctx, caller, current.id);
  await writer.awaitStream(userStream(caller.employerId, current.id));
}

/**
 * A deactivated user's API keys are revoked and sessions ended, through their own capabilities'
 * commands, also when the user was already inactive: a key or session left over by a failed earlier
 * attempt goes now.
 */
async function endAccess(ctx: AppContext, caller: ScimCaller, userId: string) {
  const context = contextOf(caller);
  await revokeKeysCreatedBy(ctx, context, { userId });
  await endUserSessions(ctx, context, { userId });
}

/** POST /Groups. Returns the new group's id. */
export async function createScimGroup(ctx: AppContext, writer: ScimWriter, caller: ScimCaller, doc: ScimGroupDoc): Promise<string> {
  const groupId = randomUUID();
  const members = doc.members.map((member) => member.value);
  await assertMembersOfEmployer(ctx, caller.employerId, members);
  await runGroupCommand(writer, caller, groupId, {
    type: 'CreateGroup',
    groupId,
    employerId: caller.employerId,
    displayName: doc.displayName,
    externalId: doc.externalId ?? null,
    members,
  });
  return groupId;
}

/** PUT, or PATCH once applied: brings the group from `before` to `after` by member deltas. */
export async function updateScimGroup(ctx: AppContext, writer: ScimWriter, caller: ScimCaller, groupId: string, before: ScimGroupDoc, after: ScimGroupDoc): Promise<void> {
  const previous = new Set(before.members.map((member) => member.value));
  const next = new Set(after.members.map((member) => member.value));
  const addMembers = [...next].filter((id) => !previous.has(id));
  await assertMembersOfEmployer(ctx, caller.employerId, addMembers);
  await runGroupCommand(writer, caller, groupId, {
    type: 'ChangeGroup',
    displayName: after.displayName,
    externalId: after.externalId ?? null,
    addMembers,
    removeMembers: [...previous].filter((id) => !next.has(id)),
  });
}

export async function deleteScimGroup(writer: ScimWriter, caller: ScimCaller, groupId: string): Promise<void> {
  await runGroupCommand(writer, caller, groupId, { type: 'DeleteGroup' });
}

async function runGroupCommand(writer: ScimWriter, caller: ScimCaller, groupId: string, command: GroupCommand) {
  const { position } = await withScimErrors(() =>
    handleCommand(writer.deps, { streamName: groupStream(caller.employerId, groupId), decider: groupDecider, command, context: contextOf(caller) }),
  );
  if (position) await writer.awaitReadModels(position);
}

async function assertMembersOfEmployer(ctx: AppContext, employerId: string, userIds: string[]) {
  const unknown = await unknownUserIds(ctx.db.slonik, employerId, userIds);
  if (unknown.length > 0) {
    throw new ScimError(400, 'invalidValue', `Members must be users of this employer; unknown: ${unknown.slice(0, 10).join(', ')}.`);
  }
}

/**
 * userName is unique within the employer. Checked on the read model: two requests racing with the
 * same userName and different e-mails could both pass (the e-mail, unique everywhere, is enforced
 * by its reservation stream).
 */
async function assertUserNameFree(ctx: AppContext, employerId: string, userName: string, exceptUserId: string | null) {
  if (await isUserNameTaken(ctx.db.slonik, employerId, userName, exceptUserId)) {
    throw new ScimError(409, 'uniqueness', 'A user with this userName already exists.');
  }
}

const EMAIL_SHAPE = /^[^\s@]+@[^\s@]+$/;

/**
 * The user's sign-in e-mail: the work address, else the primary, else the first; a userName that is
 * an e-mail address (Okta's default) when no e-mail is sent.
 */
export function signInEmailOf(doc: ScimUserDoc): string {
  const chosen =
    doc.emails.find((email) => email.type?.toLowerCase() === 'work') ?? doc.emails.find((email) => email.primary) ?? doc.emails[0];
  const email = chosen?.value ?? (EMAIL_SHAPE.test(doc.userName) ? doc.userName : null);
  if (!email) throw new ScimError(400, 'invalidValue', 'The user needs an e-mail address: send emails, or a userName that is an e-mail address.');
  if (!EMAIL_SHAPE.test(email)) throw new ScimError(400, 'invalidValue', `"${email}" is not an e-mail address.`);
  return email;
}

function profileOf(doc: ScimUserDoc): UserProfile {
  return {
    email: signInEmailOf(doc),
    userName: doc.userName,
    givenName: doc.name?.givenName ?? null,
    familyName: doc.name?.familyName ?? null,
    displayName: doc.displayName ?? null,
    externalId: doc.externalId ?? null,
    emails: doc.emails.map((email) => ({ ...email })),
  };
}

/** The tenants capability's domain errors in SCIM terms (RFC 7644 section 3.12). */
async function withScimErrors<T>(action: () => Promise<T>): Promise<T> {
  try {
    return await action();
  } catch (error) {
    if (error instanceof DomainError) {
      if (error.code === 'EMAIL_TAKEN') throw new ScimError(409, 'uniqueness', 'A user with this e-mail already exists in this employer.');
      if (error.code === 'EMAIL_TAKEN_ELSEWHERE') throw new ScimError(409, 'uniqueness', 'A user with this e-mail already exists in another employer.');
      if (error.status === 404) throw new ScimError(404, null, 'The resource was not found.');
    }
    throw error;
  }
}
