// Commands on API keys. Each one is decided by the key's stream (api-key.ts); the projection then
// updates `api_keys` and notifies every process, and this process drops its cached copy at once.
import { randomUUID } from 'node:crypto';
import type { AppContext } from '../app-context.ts';
import type { Scope } from '../auth/principal.ts';
import { handleCommand, handleCommands, type CommandContext } from '../event-store/command-handler.ts';
import { userDecider, userStream } from '../tenants/user.ts';
import { apiKeyDecider, apiKeyStream, type ApiKeyCommand, type RevokeReason } from './api-key.ts';
import { apiKeyPipelineOf } from './pipeline.ts';
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
export async function createApiKey(ctx: AppContext, context: CommandContext, employerId: string, input: NewApiKey, now: number) {
  const keyId = newApiKeyId();
  const rawKey = generateRawKey();
  await handleCommands(ctx.commands, [
    { streamName: userStream(employerId, input.createdBy), decider: userDecider, command: { type: 'RecordApiKey', keyId } as const, context },
    {
      streamName: apiKeyStream(employerId, keyId),
      decider: apiKeyDecider,
      command: { type: 'CreateApiKey', keyId, keyHash: hashRawKey(rawKey), keyPrefix: displayPrefixOf(rawKey), ...input, now: new Date(now).toISOString() } as const,
      context,
      newStream: true,
    },
  ]);
  return { keyId, rawKey };
}

export async function revokeApiKey(ctx: AppContext, context: CommandContext, employerId: string, keyId: string, reason: RevokeReason, now: number) {
  await runApiKeyCommand(ctx, context, employerId, keyId, { type: 'RevokeApiKey', reason, now: new Date(now).toISOString() });
}

/** PATCH: rename, suspend (status inactive) or resume (status active); each change is its own event. */
export async function changeApiKey(ctx: AppContext, context: CommandContext, employerId: string, keyId: string, changes: { name?: string; status?: 'active' | 'inactive' }) {
  if (changes.name !== undefined) await runApiKeyCommand(ctx, context, employerId, keyId, { type: 'RenameApiKey', name: changes.name });
  if (changes.status !== undefined) {
    await runApiKeyCommand(ctx, context, employerId, keyId, { type: changes.status === 'inactive' ? 'SuspendApiKey' : 'ResumeApiKey' });
  }
}

async function runApiKeyCommand(ctx: AppContext, context: CommandContext, employerId: string, keyId: string, command: ApiKeyCommand) {
  const { state, newEvents } = await handleCommand(ctx.commands, { streamName: apiKeyStream(employerId, keyId), decider: apiKeyDecider, command, context });
  if (newEvents.length > 0 && state.status !== 'absent') apiKeyPipelineOf(ctx)?.invalidate(state.keyHash);
}
