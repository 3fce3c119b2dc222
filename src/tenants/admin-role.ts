// Administrators from the identity provider: an employer maps IdP groups to the administrator role
// (SCIM groups, a SAML attribute's values), and membership gives or takes the role. Giving or taking
// it is one append: the user's UserRoleChanged, the employer's AdministratorAdded or
// AdministratorRemoved (the employer aggregate refuses to remove the last administrator) and, when it
// is taken, the revocation of every API key the user created; the user's sessions end after it.
// Deactivating an administrator takes the role too, decided the same way (src/tenants/commands.ts, changeUser).
import type { AppContext } from '../app-context.ts';
import { revokeKeyCommands, type ApiKeyState } from '../api-keys/api-key.ts';
import { employerOf, handleCommand, handleCommands, type CommandContext, type CommandDeps } from '../event-store/command-handler.ts';
import { DomainError, fold } from '../event-store/decider.ts';
import { endUserSessions } from '../identity/commands.ts';
import { adminIdsOf } from '../../projections/tenants/queries.ts';
import { employerDecider, employerStream } from './employer.ts';
import type { AdminRoleMapping, AdminRoleSource, EmployerEvent, UserEvent } from './events.ts';
import { userDecider, userStream } from './user.ts';

export async function setAdminRoleMapping(ctx: AppContext, context: CommandContext, input: { mapping: AdminRoleMapping }) {
  await handleCommand(ctx.commands, {
    streamName: employerStream(employerOf(context)),
    decider: employerDecider,
    command: { type: 'SetAdminRoleMapping', mapping: input.mapping },
    context,
  });
}

/** The mapping as the employer's stream holds it (a reaction reads it here, never from a lagging read model). */
export async function currentAdminRoleMapping(ctx: AppContext, employerId: string): Promise<AdminRoleMapping> {
  const history = (await ctx.eventStore.readStream(employerStream(employerId))) as unknown as EmployerEvent[];
  return fold(employerDecider, history).adminRoleMapping;
}

/**
 * At a SAML sign-in: an assertion carrying a value the employer maps in its group attribute makes the
 * user an administrator before the session starts. One without it changes nothing (the role may come
 * from a SCIM group or the CLI; the IdP takes it away through SCIM or deactivation).
 */
export async function applySamlAdminRoleMapping(ctx: AppContext, context: CommandContext, input: { userId: string; attributes: Record<string, string[]> }): Promise<void> {
  const mapping = await currentAdminRoleMapping(ctx, employerOf(context));
  if (mapping.samlAttribute === null) return;
  const values = input.attributes[mapping.samlAttribute] ?? [];
  if (values.some((value) => mapping.samlValues.includes(value))) await changeAdminRole(ctx, context, { userId: input.userId, admin: true, via: 'saml_attribute' });
}

export type AdminRoleOutcome = 'changed' | 'unchanged' | 'refused';

const MAX_ATTEMPTS = 5;

/**
 * Gives (`admin`) or takes the administrator role of an active user. Taking it from the last
 * administrator is refused: the refusal is recorded on the employer's stream (audited, and e-mailed
 * to the administrators by the tenants' worker task) and 'refused' returned.
 */
export async function changeAdminRole(ctx: AppContext, context: CommandContext, input: { userId: string; admin: boolean; via: AdminRoleSource }): Promise<AdminRoleOutcome> {
  const employerId = employerOf(context);
  const { userId, admin, via } = input;
  const streamName = userStream(employerId, userId);
  for (let attempt = 1; ; attempt++) {
    const history = (await ctx.eventStore.readStream(streamName)) as unknown as UserEvent[];
    const user = fold(userDecider, history);
    // An inactive user holds no role worth changing: it cannot sign in, and its keys are revoked.
    if (user.status !== 'active' || (user.role === 'EMPLOYER_ADMIN') === admin) return 'unchanged';
    const revision = BigInt(history.length - 1);
    const knownAdministrators = await adminIdsOf(ctx.db.slonik, employerId);
    const revocations = admin ? [] : revokeKeyCommands(context, employerId, user.apiKeyIds, new Date().toISOString(), 'creator_role_revoked');
    try {
      const { results } = await handleCommands(ctx.commands, [
        // Pinned to the revision read: a key created meanwhile is in the next attempt's revocations.
        { streamName, decider: userDecider, command: { type: 'ChangeRole', role: admin ? 'EMPLOYER_ADMIN' : 'PATIENT' } as const, context, precondition: (current: bigint) => current === revision },
        { streamName: employerStream(employerId), decider: employerDecider, command: { type: admin ? 'AddAdministrator' : 'RemoveAdministrator', userId, via, knownAdministrators } as const, context },
        ...revocations,
      ]);
      for (const { newEvents, state } of results.slice(2)) {
        const key = state as ApiKeyState;
        if (newEvents.length > 0 && key.status !== 'absent') ctx.auth.apiKeys.invalidate(key.keyHash);
      }
      if (!admin) await endUserSessions(ctx, context, { userId, reason: 'role_revoked' });
      return 'changed';
    } catch (error) {
      if (!(error instanceof DomainError)) throw error;
      if (error.code === 'PRECONDITION_FAILED' && attempt < MAX_ATTEMPTS) continue;
      if (error.code !== 'LAST_ADMINISTRATOR') throw error;
      await recordAdministratorRemovalRefused(ctx.commands, context, { userId, via });
      return 'refused';
    }
  }
}

export async function recordAdministratorRemovalRefused(deps: CommandDeps, context: CommandContext, input: { userId: string; via: AdminRoleSource }) {
  await handleCommand(deps, {
    streamName: employerStream(employerOf(context)),
    decider: employerDecider,
    command: { type: 'RecordAdministratorRemovalRefused', ...input },
    context,
  });
}
