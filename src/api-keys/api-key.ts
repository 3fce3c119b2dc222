// The API key aggregate: stream tenant-<employerId>.apiKey-<keyId>. A key is created once, may be
// suspended and resumed (status inactive/active), renamed and have its settings changed in place, and
// is revoked for good: at once (DELETE), or at the end of a roll's overlap. Expiry and a roll's end
// are not events: a key is expired (or revoked) from the moment its time passes, whoever looks.
import { DomainError, type Decider } from '../event-store/decider.ts';
import type { CommandContext } from '../event-store/command-handler.ts';
import { tenantStream } from '../event-store/port.ts';
import type { ApiKeyCreated, ApiKeyEvent, ApiKeySettings, RevokeReason } from './events.ts';

export type CreateApiKey = { type: 'CreateApiKey'; now: string } & Omit<ApiKeyCreated['data'], 'createdAt'>;
export type ApiKeyCommand =
  | CreateApiKey
  | { type: 'RenameApiKey'; name: string }
  | { type: 'SuspendApiKey' }
  | { type: 'ResumeApiKey' }
  | { type: 'RevokeApiKey'; reason: RevokeReason; now: string }
  | { type: 'ChangeApiKeySettings'; changes: Partial<ApiKeySettings>; now: string }
  /** The successor is created in the same append (commands.ts rollApiKey); this key is revoked from revokesAt on. */
  | { type: 'RollApiKey'; successorKeyId: string; revokesAt: string; now: string };

export type ApiKeyState =
  | { status: 'absent' }
  | {
      status: 'active' | 'inactive' | 'revoked';
      keyId: string;
      keyHash: string;
      name: string;
      settings: ApiKeySettings;
      /** Set once the key was rolled: its successor and the end of the overlap. */
      rolled: { successorKeyId: string; revokesAt: string } | null;
    };

const revokedError = () => new DomainError('conflict', 'API_KEY_REVOKED', 'The API key is revoked; a revoked key cannot be changed.');

function mustBeFuture(expiresAt: string | null | undefined, now: string, path: string) {
  if (expiresAt !== null && expiresAt !== undefined && Date.parse(expiresAt) <= Date.parse(now)) {
    throw new DomainError('invalid', 'VALIDATION_ERROR', `Invalid request: ${path}: must be in the future`, { errors: [{ path, message: 'must be in the future' }] });
  }
}

export const apiKeyDecider: Decider<ApiKeyCommand, ApiKeyEvent, ApiKeyState> = {
  initialState: () => ({ status: 'absent' }),
  evolve: (state, event) => {
    if (event.type === 'ApiKeyCreated') {
      const { keyId, keyHash, name, scopes, allowedIpCidrs, expiresAt, rateLimitPerMinute } = event.data;
      return { status: 'active', keyId, keyHash, name, settings: { scopes, allowedIpCidrs, expiresAt, rateLimitPerMinute }, rolled: null };
    }
    if (state.status === 'absent') return state;
    switch (event.type) {
      case 'ApiKeyRenamed':
        return { ...state, name: event.data.name };
      case 'ApiKeySuspended':
        return { ...state, status: 'inactive' };
      case 'ApiKeyResumed':
        return { ...state, status: 'active' };
      case 'ApiKeyRevoked':
        return { ...state, status: 'revoked' };
      case 'ApiKeySettingsChanged':
        return { ...state, settings: { ...state.settings, ...event.data.changes } };
      case 'ApiKeyRolled':
        return { ...state, rolled: { successorKeyId: event.data.successorKeyId, revokesAt: event.data.revokesAt } };
    }
  },
  decide: (command, state) => {
    if (command.type === 'CreateApiKey') {
      if (state.status !== 'absent') throw new DomainError('conflict', 'CONFLICT', 'An API key with this id already exists.');
      mustBeFuture(command.expiresAt, command.now, 'body.expiresAt');
      const { type: _type, now, ...data } = command;
      return [{ type: 'ApiKeyCreated', data: { ...data, createdAt: now } }];
    }
    if (state.status === 'absent') throw new DomainError('not_found', 'NOT_FOUND', 'API key was not found.');
    if (command.type === 'RevokeApiKey') {
      // Revoking twice is not an error: DELETE is idempotent and the key stays revoked as it was.
      // A rolled key in its overlap is revoked now: that ends the overlap early.
      if (state.status === 'revoked') return [];
      return [{ type: 'ApiKeyRevoked', data: { keyId: state.keyId, reason: command.reason, revokedAt: command.now } }];
    }
    if (state.status === 'revoked') throw revokedError();
    switch (command.type) {
      case 'RenameApiKey':
        return command.name === state.name ? [] : [{ type: 'ApiKeyRenamed', data: { keyId: state.keyId, name: command.name } }];
      case 'SuspendApiKey':
        return state.status === 'inactive' ? [] : [{ type: 'ApiKeySuspended', data: { keyId: state.keyId } }];
      case 'ResumeApiKey':
        return state.status === 'active' ? [] : [{ type: 'ApiKeyResumed', data: { keyId: state.keyId } }];
      case 'ChangeApiKeySettings': {
        if (state.rolled && Date.parse(state.rolled.revokesAt) <= Date.parse(command.now)) throw revokedError();
        mustBeFuture(command.changes.expiresAt, command.now, 'body.expiresAt');
        const changes = changedSettings(state.settings, command.changes);
        return Object.keys(changes).length === 0 ? [] : [{ type: 'ApiKeySettingsChanged', data: { keyId: state.keyId, changes } }];
      }
      case 'RollApiKey':
        if (state.rolled) {
          throw new DomainError('conflict', 'API_KEY_ROLLED', `The API key was already rolled into ${state.rolled.successorKeyId}; roll that one.`, {
            successorKeyId: state.rolled.successorKeyId,
          });
        }
        if (state.settings.expiresAt !== null && Date.parse(state.settings.expiresAt) <= Date.parse(command.now)) {
          throw new DomainError('conflict', 'API_KEY_EXPIRED', 'The API key has expired; create a new one instead of rolling it.');
        }
        return [{ type: 'ApiKeyRolled', data: { keyId: state.keyId, successorKeyId: command.successorKeyId, revokesAt: command.revokesAt } }];
    }
  },
};

function changedSettings(current: ApiKeySettings, requested: Partial<ApiKeySettings>): Partial<ApiKeySettings> {
  const changes: Partial<ApiKeySettings> = {};
  const sameSet = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((entry) => b.includes(entry));
  if (requested.scopes !== undefined && !sameSet(requested.scopes, current.scopes)) changes.scopes = requested.scopes;
  if (requested.allowedIpCidrs !== undefined && !sameSet(requested.allowedIpCidrs, current.allowedIpCidrs)) changes.allowedIpCidrs = requested.allowedIpCidrs;
  if (requested.expiresAt !== undefined && requested.expiresAt !== current.expiresAt) changes.expiresAt = requested.expiresAt;
  if (requested.rateLimitPerMinute !== undefined && requested.rateLimitPerMinute !== current.rateLimitPerMinute) changes.rateLimitPerMinute = requested.rateLimitPerMinute;
  return changes;
}

export const apiKeyStream = (employerId: string, keyId: string) => tenantStream(employerId, 'apiKey', keyId);

/** Revocation of each of `keyIds` (already revoked keys write nothing), for an append shared with another command. */
export function revokeKeyCommands(context: CommandContext, employerId: string, keyIds: readonly string[], now: string, reason: RevokeReason = 'creator_deactivated') {
  return keyIds.map((keyId) => ({
    streamName: apiKeyStream(employerId, keyId),
    decider: apiKeyDecider,
    command: { type: 'RevokeApiKey', reason, now } as ApiKeyCommand,
    context,
  }));
}
