// Commands on employers and users. Registering a user claims its e-mail's reservation stream in the
// same write (appendToStreams), so two employers can never hold the same address, on either event
// store adapter, and a failed registration leaves no claim behind.
import { randomUUID } from 'node:crypto';
import type { AppContext } from '../app-context.ts';
import { handleCommand, handleCommands, type CommandContext, type CommandDeps } from '../event-store/command-handler.ts';
import type { Position } from '../event-store/port.ts';
import type { Role } from '../auth/principal.ts';
import { employerDecider, employerStream } from './employer.ts';
import { emailHash, emailReservationDecider, emailReservationStream } from './email-reservation.ts';
import type { UserProfile, UserRegistered, UserSource } from './events.ts';
import { userDecider, userStream } from './user.ts';

export function newEmployerId(): string {
  return `emp_${randomUUID().replaceAll('-', '')}`;
}

/** `context` names who acts; its tenantId is not read, since the employer's id is minted here. */
export async function createEmployer(ctx: AppContext, context: CommandContext, input: { name: string; adminEmail: string }) {
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
    profile: { email: input.adminEmail, userName: input.adminEmail, givenName: null, familyName: null, displayName: null, externalId: null },
    active: true,
    source: 'cli',
  });
  return { employerId, adminUserId: admin.userId };
}

export async function registerUser(
  deps: CommandDeps,
  context: CommandContext,
  input: { employerId: string; role: Role; profile: UserProfile; active: boolean; source: UserSource; userId?: string },
): Promise<{ userId: string; position: Position | null; registered: { event: UserRegistered; occurredAt: string } }> {
  const userId = input.userId ?? randomUUID();
  const { results, position, occurredAt } = await handleCommands(deps, [
    reserveEmail(context, input.profile.email, input.employerId, userId),
    {
      streamName: userStream(input.employerId, userId),
      decider: userDecider,
      command: { type: 'RegisterUser', userId, employerId: input.employerId, role: input.role, profile: input.profile, active: input.active, source: input.source },
      context,
      newStream: input.userId === undefined,
    },
  ]);
  // The decider answers a registration with exactly one UserRegistered (or refuses it).
  return { userId, position, registered: { event: results[1].newEvents[0] as UserRegistered, occurredAt } };
}

/** A new e-mail address is claimed, and the old one released, in the same write as the change. */
export async function updateUserProfile(deps: CommandDeps, context: CommandContext, employerId: string, userId: string, current: UserProfile, changes: Partial<UserProfile>) {
  const newEmail = changes.email !== undefined && changes.email.toLowerCase() !== current.email.toLowerCase() ? changes.email : null;
  const update = { streamName: userStream(employerId, userId), decider: userDecider, command: { type: 'UpdateUserProfile', changes } as const, context };
  if (!newEmail) return (await handleCommand(deps, update)).state;
  const { results } = await handleCommands(deps, [update, reserveEmail(context, newEmail, employerId, userId), releaseEmail(context, current.email, userId)]);
  return results[0].state;
}

export async function setUserActive(deps: CommandDeps, context: CommandContext, employerId: string, userId: string, active: boolean) {
  const result = await handleCommand(deps, {
    streamName: userStream(employerId, userId),
    decider: userDecider,
    command: active ? { type: 'ReactivateUser' } : { type: 'DeactivateUser', scimDelete: false },
    context,
  });
  return result;
}

/**
 * SCIM DELETE: deactivates the user for good and frees its e-mail address in the same append, since a
 * deleted user must not stand in the way of a new one (RFC 7644 section 3.6). `email` is the user's
 * current address; the release is a no-op unless the user holds it.
 */
export async function deleteUser(deps: CommandDeps, context: CommandContext, employerId: string, userId: string, email: string) {
  return handleCommands(deps, [
    { streamName: userStream(employerId, userId), decider: userDecider, command: { type: 'DeactivateUser', scimDelete: true } as const, context },
    releaseEmail(context, email, userId),
  ]);
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
