// Commands on API keys. Each one is decided by the key's stream (api-key.ts); the projection then
// updates `api_keys` and notifies every process, and this process drops its cached copy at once.
import { randomUUID } from 'node:crypto';
import type { AppContext } from '../app-context.ts';
import type { Scope } from '../auth/principal.ts';
import { employerOf, handleCommand, handleCommands, handlePlannedCommands, type CommandContext } from '../event-store/command-handler.ts';
import { DomainError, fold } from '../event-store/decider.ts';
import { userDecider, userStream } from '../tenants/user.ts';
import { apiKeyDecider, apiKeyStream, type ApiKeyCommand, type ApiKeyState } from './api-key.ts';
import type { ApiKeyEvent, ApiKeySettings, RevokeReason } from './events.ts';
import { displayPrefixOf, generateRawKey, hashRawKey } from './raw-key.ts';

export type NewApiKey = {
  name: string;
  scopes: Scope[];
  /** Normalised CIDRs (cidr.ts normalizeCidr). */
  allowedIpCidrs: string[];
  expiresAt: string | null;
  rateLimitPerMinute: number | null;
  createdBy: string;
};

export function newApiKeyId(): string {
  return `key_${randomUUID().replaceAll('-', '')}`;
}

/**
 * Creates a key and returns its raw value: the only time it exists outside the caller's hands. The
 * creator's stream records the key in the same append (refused once the creator is deactivated), so
 * deactivating the creator revokes it however recent it is.
 */
export async function createApiKey(ctx: AppContext, context: CommandContext, input: NewApiKey & { now: number }) {
  const keyId = newApiKeyId();
  const rawKey = generateRawKey();
  const { now, ...key } = input;
  const employerId = employerOf(context);
  await handleCommands(ctx.commands, [
    { streamName: userStream(employerId, key.createdBy), decider: userDecider, command: { type: 'RecordApiKey', keyId } as const, context },
    {
      streamName: apiKeyStream(employerId, keyId),
      decider: apiKeyDecider,
      command: { type: 'CreateApiKey', keyId, keyHash: hashRawKey(rawKey), keyPrefix: displayPrefixOf(rawKey), ...key, now: new Date(now).toISOString() } as const,
      context,
      newStream: true,
    },
  ]);
  return { keyId, rawKey };
}

export async function revokeApiKey(ctx: AppContext, context: CommandContext, input: { keyId: string; reason: RevokeReason; now: number }) {
  await runApiKeyCommand(ctx, context, input.keyId, { type: 'RevokeApiKey', reason: input.reason, now: new Date(input.now).toISOString() });
}

/**
 * PATCH: rename, suspend (status inactive) or resume (status active), change settings in place; each
 * kind of change is its own event. Every process drops its cached copy (NOTIFY api_key_changed).
 */
export async function changeApiKey(
  ctx: AppContext,
  context: CommandContext,
  input: { keyId: string; name?: string; status?: 'active' | 'inactive'; settings: Partial<ApiKeySettings>; now: number },
) {
  const { keyId, name, status, settings, now } = input;
  if (Object.keys(settings).length > 0) await runApiKeyCommand(ctx, context, keyId, { type: 'ChangeApiKeySettings', changes: settings, now: new Date(now).toISOString() });
  if (name !== undefined) await runApiKeyCommand(ctx, context, keyId, { type: 'RenameApiKey', name });
  if (status !== undefined) {
    await runApiKeyCommand(ctx, context, keyId, { type: status === 'inactive' ? 'SuspendApiKey' : 'ResumeApiKey' });
  }
}

/**
 * Rolls a key: a new key with the same name and settings, created by the caller (recorded on their
 * stream, as a creation is), and the old key revoked from `now + overlapMs` on (at once for 0). One
 * append, planned from the old key's stream as read; a concurrent change to it makes the plan again.
 * Returns the new key's id and raw value (shown once).
 */
export async function rollApiKey(ctx: AppContext, context: CommandContext, input: { keyId: string; overlapMs: number; createdBy: string; now: number }) {
  const employerId = employerOf(context);
  const successorKeyId = newApiKeyId();
  const rawKey = generateRawKey();
  const now = new Date(input.now).toISOString();
  const oldStream = apiKeyStream(employerId, input.keyId);
  const { results } = await handlePlannedCommands(ctx.commands, async () => {
    // Parsed by the event registry on read: the key's own events.
    const history = (await ctx.eventStore.readStream(oldStream)) as unknown as ApiKeyEvent[];
    const state = fold(apiKeyDecider, history);
    if (state.status === 'absent') throw new DomainError('not_found', 'NOT_FOUND', 'API key was not found.');
    return {
      result: null,
      commands: [
        {
          streamName: oldStream,
          decider: apiKeyDecider,
          command: { type: 'RollApiKey', successorKeyId, revokesAt: new Date(input.now + input.overlapMs).toISOString(), now } as const,
          context,
          readAs: { revision: BigInt(history.length - 1), state },
        },
        { streamName: userStream(employerId, input.createdBy), decider: userDecider, command: { type: 'RecordApiKey', keyId: successorKeyId } as const, context },
        {
          streamName: apiKeyStream(employerId, successorKeyId),
          decider: apiKeyDecider,
          command: {
            type: 'CreateApiKey', keyId: successorKeyId, keyHash: hashRawKey(rawKey), keyPrefix: displayPrefixOf(rawKey), name: state.name, ...state.settings,
            createdBy: input.createdBy, now,
          } as const,
          context,
          newStream: true,
        },
      ],
    };
  });
  // This process's cached copy of the old key knows nothing of its end yet.
  const rolled = results[0]?.state as ApiKeyState;
  if (rolled.status !== 'absent') ctx.auth.apiKeys.invalidate(rolled.keyHash);
  return { keyId: successorKeyId, rawKey };
}

async function runApiKeyCommand(ctx: AppContext, context: CommandContext, keyId: string, command: ApiKeyCommand) {
  const { state, newEvents } = await handleCommand(ctx.commands, { streamName: apiKeyStream(employerOf(context), keyId), decider: apiKeyDecider, command, context });
  if (newEvents.length > 0 && state.status !== 'absent') ctx.auth.apiKeys.invalidate(state.keyHash);
}
