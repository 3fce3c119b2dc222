// Commands on API keys. Each one is decided by the key's stream (api-key.ts); the projection then
// updates `api_keys` and notifies every process, and this process drops its cached copy at once.
import { randomUUID } from 'node:crypto';
import type { AppContext } from '../app-context.ts';
import type { Scope } from '../auth/principal.ts';
import { employerOf, handleCommand, handleCommands, type CommandContext } from '../event-store/command-handler.ts';
import { userDecider, userStream } from '../tenants/user.ts';
import { apiKeyDecider, apiKeyStream, type ApiKeyCommand } from './api-key.ts';
import type { RevokeReason } from './events.ts';
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

/** PATCH: rename, suspend (status inactive) or resume (status active); each change is its own event. */
export async function changeApiKey(ctx: AppContext, context: CommandContext, input: { keyId: string; name?: string; status?: 'active' | 'inactive' }) {
  const { keyId, name, status } = input;
  if (name !== undefined) await runApiKeyCommand(ctx, context, keyId, { type: 'RenameApiKey', name });
  if (status !== undefined) {
    await runApiKeyCommand(ctx, context, keyId, { type: status === 'inactive' ? 'SuspendApiKey' : 'ResumeApiKey' });
  }
}

async function runApiKeyCommand(ctx: AppContext, context: CommandContext, keyId: string, command: ApiKeyCommand) {
  const { state, newEvents } = await handleCommand(ctx.commands, { streamName: apiKeyStream(employerOf(context), keyId), decider: apiKeyDecider, command, context });
  if (newEvents.length > 0 && state.status !== 'absent') ctx.auth.apiKeys.invalidate(state.keyHash);
}
