// Commands on SMART clients, each decided by the client's stream (smart-client.ts); the projection then
// updates `smart_clients` and, on revocation, makes every process forget the client's access tokens.
import { randomUUID } from 'node:crypto';
import type { AppContext } from '../app-context.ts';
import { employerOf, handleCommand, type CommandContext } from '../event-store/command-handler.ts';
import type { KeySource } from './events.ts';
import { smartClientDecider, smartClientStream, type SmartClientCommand } from './smart-client.ts';

export type NewSmartClient = KeySource & { name: string; scopes: string[]; registeredBy: string };

export async function registerSmartClient(ctx: AppContext, context: CommandContext, input: NewSmartClient & { now: number }): Promise<string> {
  const clientId = `smart_${randomUUID().replaceAll('-', '')}`;
  const { now, ...client } = input;
  await runSmartClientCommand(ctx, context, clientId, { type: 'RegisterSmartClient', clientId, ...client, now: new Date(now).toISOString() }, true);
  return clientId;
}

export async function replaceSmartClientKeys(ctx: AppContext, context: CommandContext, input: KeySource & { clientId: string; now: number }) {
  const { clientId, now, ...keys } = input;
  await runSmartClientCommand(ctx, context, clientId, { type: 'ReplaceSmartClientKeys', ...keys, now: new Date(now).toISOString() });
}

export async function revokeSmartClient(ctx: AppContext, context: CommandContext, input: { clientId: string; now: number }) {
  await runSmartClientCommand(ctx, context, input.clientId, { type: 'RevokeSmartClient', now: new Date(input.now).toISOString() });
}

async function runSmartClientCommand(ctx: AppContext, context: CommandContext, clientId: string, command: SmartClientCommand, newStream = false) {
  await handleCommand(ctx.commands, { streamName: smartClientStream(employerOf(context), clientId), decider: smartClientDecider, command, context, ...(newStream ? { newStream } : {}) });
}
