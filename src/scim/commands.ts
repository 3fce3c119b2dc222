// SCIM writes: users through the tenants capability's user aggregate, groups through the group
// aggregate. Every command names the employer of the SCIM token, and every stream it touches is that
// employer's, so an id of another employer is simply absent (404). Domain errors become SCIM errors.
// Each function returns once SCIM's read models show its writes (read-your-writes.ts).
import { randomUUID } from 'node:crypto';
import { isUserNameTaken, unknownUserIds, type ScimUserRow } from '../../projections/tenants/queries.ts';
import { registeredUserRow, scimAttributesOf, scimEmails } from '../../projections/tenants/rows.ts';
import type { AppContext } from '../app-context.ts';
import { handleCommand, type CommandContext } from '../event-store/command-handler.ts';
import { DomainError } from '../event-store/decider.ts';
import { endUserSessions } from '../identity/commands.ts';
import { changeUser, registerUser, type ExistingUser, type UserTarget } from '../tenants/commands.ts';
import type { UserProfile } from '../tenants/events.ts';
import { SCIM_ENTERPRISE_USER_SCHEMA, type ScimGroupDoc, type ScimUserDoc } from './attributes.ts';
import { ScimError } from './errors.ts';
import { groupDecider, groupStream, type GroupCommand } from './group.ts';
import type { ScimWriter } from './read-your-writes.ts';
import { scimUserDoc } from './resources.ts';

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
  return registeredUserRow(registered.user, { occurredAt: registered.occurredAt, revision: 0n });
}

/** If-Match as a condition on the stream's revision (RFC 7644 section 3.14); absent: any revision. */
export type IfMatch = ((revision: bigint) => boolean) | undefined;

/**
 * PUT or PATCH: `change` turns the user's document, as the user's stream holds it, into the wanted one.
 * One append writes all of it or nothing (profile, active flag, e-mail claims and, on deactivation,
 * the revocation of every API key the user created), at the revision the document was read at and
 * If-Match names (else 412). Deactivation also ends the user's sessions.
 */
export async function updateScimUser(ctx: AppContext, writer: ScimWriter, caller: ScimCaller, userId: string, ifMatch: IfMatch, change: (doc: ScimUserDoc) => ScimUserDoc): Promise<void> {
  await writeScimUser(ctx, writer, caller, userId, ifMatch, async (user) => {
    const doc = change(scimDocOf(user));
    const profile = profileOf(doc);
    if (user.role !== 'PATIENT') assertSameSignInIdentity(user, profile);
    if (doc.userName.toLowerCase() !== user.profile.userName.toLowerCase()) await assertUserNameFree(ctx, caller.employerId, doc.userName, userId);
    return { profile, active: doc.active };
  });
}

/**
 * SCIM provisions PATIENT users (administrators only through the groups an administrator mapped to the
 * role: src/tenants/admin-role.ts). It may deactivate or delete an administrator other than the last
 * (offboarding, which revokes the keys the administrator created: SPEC 2.1, 4.6), but not re-address one: a SCIM token,
 * which a key with sso:manage can obtain, would otherwise give an administrator the e-mail of an IdP
 * account its holder signs in with, and that SAML sign-in would be the administrator's session.
 */
function assertSameSignInIdentity(user: ExistingUser, profile: UserProfile) {
  const same = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();
  if (!same(profile.email, user.profile.email) || !same(profile.userName, user.profile.userName)) {
    throw new ScimError(400, 'mutability', "An administrator's userName and sign-in e-mail are not managed through SCIM; SCIM may only deactivate or delete an administrator.");
  }
}

/** DELETE /Users/{id}: deactivated, hidden from SCIM (404 from now on) and its e-mail freed, but kept. */
export async function deleteScimUser(ctx: AppContext, writer: ScimWriter, caller: ScimCaller, userId: string, ifMatch: IfMatch): Promise<void> {
  await writeScimUser(ctx, writer, caller, userId, ifMatch, () => ({ delete: true }));
}

async function writeScimUser(ctx: AppContext, writer: ScimWriter, caller: ScimCaller, userId: string, ifMatch: IfMatch, target: (user: ExistingUser) => Promise<UserTarget> | UserTarget) {
  const context = contextOf(caller);
  let deactivated = false;
  const { position, revokedKeyHashes } = await withScimErrors(() =>
    changeUser(writer.deps, context, caller.employerId, userId, async (user) => {
      // Deleted through SCIM: gone as far as SCIM is concerned.
      if (user.scimDeleted) throw new ScimError(404, null, `User ${userId} not found.`);
      const wanted = await target(user);
      deactivated = 'delete' in wanted || !wanted.active;
      return wanted;
    }, ifMatch),
  );
  for (const keyHash of revokedKeyHashes) ctx.auth.apiKeys.invalidate(keyHash);
  // Sessions are ended also when the user was already inactive: one left over by a failed earlier attempt goes now.
  if (deactivated) await endUserSessions(ctx, context, { userId, reason: 'user_deactivated' });
  // A deactivation also waits for api-keys, which marks the user's keys revoked and refused.
  if (position) await writer.awaitReadModels(position, deactivated ? ['api-keys'] : []);
}

/** The user's SCIM document from its stream's state (as the users read model shows it). */
function scimDocOf(user: ExistingUser): ScimUserDoc {
  const { profile } = user;
  return scimUserDoc({
    user_name: profile.userName,
    external_id: profile.externalId,
    active: user.status === 'active',
    display_name: profile.displayName,
    given_name: profile.givenName,
    family_name: profile.familyName,
    emails: scimEmails(profile.emails, profile.email),
    scim_attributes: scimAttributesOf(profile),
  });
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

/**
 * PUT, or PATCH once applied: brings the group from `before` to `after` by member deltas, in one
 * append; If-Match is checked against the group's stream (412 when it has moved on).
 */
export async function updateScimGroup(ctx: AppContext, writer: ScimWriter, caller: ScimCaller, groupId: string, before: ScimGroupDoc, after: ScimGroupDoc, ifMatch: IfMatch): Promise<void> {
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
  }, ifMatch);
}

export async function deleteScimGroup(writer: ScimWriter, caller: ScimCaller, groupId: string, ifMatch: IfMatch): Promise<void> {
  await runGroupCommand(writer, caller, groupId, { type: 'DeleteGroup' }, ifMatch);
}

async function runGroupCommand(writer: ScimWriter, caller: ScimCaller, groupId: string, command: GroupCommand, ifMatch?: IfMatch) {
  const { position } = await withScimErrors(() =>
    handleCommand(writer.deps, { streamName: groupStream(caller.employerId, groupId), decider: groupDecider, command, context: contextOf(caller), precondition: ifMatch }),
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
    // Every kept attribute is named (null when absent), so a PUT without it clears it.
    middleName: doc.name?.middleName ?? null,
    formattedName: doc.name?.formatted ?? null,
    title: doc.title ?? null,
    preferredLanguage: doc.preferredLanguage ?? null,
    locale: doc.locale ?? null,
    timezone: doc.timezone ?? null,
    phoneNumbers: doc.phoneNumbers ?? null,
    addresses: doc.addresses ?? null,
    enterprise: doc[SCIM_ENTERPRISE_USER_SCHEMA] ?? null,
  };
}

/** The tenants capability's domain errors in SCIM terms (RFC 7644 section 3.12). */
async function withScimErrors<T>(action: () => Promise<T>): Promise<T> {
  try {
    return await action();
  } catch (error) {
    if (error instanceof DomainError) {
      // One answer for every reason an address is unavailable (src/tenants/email-reservation.ts).
      if (error.code === 'EMAIL_UNAVAILABLE') throw new ScimError(409, 'uniqueness', error.message);
      if (error.kind === 'not_found') throw new ScimError(404, null, 'The resource was not found.');
      if (error.kind === 'precondition_failed') throw new ScimError(412, null, 'The resource changed since the version in If-Match.');
    }
    throw error;
  }
}
