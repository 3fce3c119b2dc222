// Commands on audit streams, from the routes. A destination URL is checked as webhook targets are
// (src/net/safe-target.ts); its credential is sealed under ENCRYPTION_KEY with the stream id and never
// shown again: the generic preset's signing secret is made here and returned once, a vendor's token
// is given by the administrator.
import { randomUUID } from 'node:crypto';
import { countAuditStreams } from '../../projections/audit-streams/queries.ts';
import type { AppContext } from '../app-context.ts';
import { encryptSecret } from '../crypto/secret-box.ts';
import { generateSigningSecret } from '../crypto/webhook-signature.ts';
import { employerOf, handleCommand, type CommandContext } from '../event-store/command-handler.ts';
import { DomainError } from '../event-store/decider.ts';
import { assertSafeTargetUrl, UnsafeTargetError } from '../net/safe-target.ts';
import type { AuditStreamPreset, AuditStreamStatus } from './events.ts';
import { auditStreamDecider, auditStreamStream, type AuditStreamCommand } from './stream.ts';
import { queueStreamRun } from './tasks.ts';

/** Streams one employer may have: each is a worker job per batch of its audit log. */
export const MAX_STREAMS_PER_EMPLOYER = 10;

export function newAuditStreamId(): string {
  return `ast_${randomUUID().replaceAll('-', '')}`;
}

async function runAuditStreamCommand(ctx: AppContext, context: CommandContext, streamId: string, command: AuditStreamCommand) {
  return handleCommand(ctx.commands, { streamName: auditStreamStream(employerOf(context), streamId), decider: auditStreamDecider, command, context });
}

/** 400 INVALID_AUDIT_STREAM_URL for a URL that is not https or whose host is not public (unless WEBHOOK_ALLOW_PRIVATE_NETWORKS). */
async function checkedUrl(ctx: AppContext, url: string): Promise<string> {
  try {
    await assertSafeTargetUrl(url, { allowPrivateNetworks: ctx.config.WEBHOOK_ALLOW_PRIVATE_NETWORKS, dnsTimeoutMs: ctx.config.WEBHOOK_DNS_TIMEOUT_MS, logger: ctx.logger });
    return url;
  } catch (error) {
    if (error instanceof UnsafeTargetError) throw new DomainError('invalid', 'INVALID_AUDIT_STREAM_URL', error.message.replace(/^webhook url/, 'url'));
    throw error;
  }
}

export type NewAuditStream = { name: string; preset: AuditStreamPreset; url: string; token: string | null; start: 'earliest' | 'latest' };

/** Returns the new id and, for the ndjson preset, its signing secret in clear (shown once, stored only sealed). */
export async function createAuditStream(ctx: AppContext, context: CommandContext, input: NewAuditStream) {
  const employerId = employerOf(context);
  if (input.preset === 'ndjson' && input.token !== null) {
    throw new DomainError('invalid', 'SECRET_NOT_SETTABLE', 'The ndjson preset signs with a secret the service makes; it takes no token.');
  }
  if (input.preset !== 'ndjson' && input.token === null) {
    throw new DomainError('invalid', 'TOKEN_REQUIRED', `The ${input.preset} preset needs the destination's token (${input.preset === 'datadog' ? 'a Datadog API key' : 'a Splunk HEC token'}).`);
  }
  if ((await countAuditStreams(ctx.db.slonik, employerId)) >= MAX_STREAMS_PER_EMPLOYER) {
    throw new DomainError('conflict', 'AUDIT_STREAM_LIMIT', `An employer has at most ${MAX_STREAMS_PER_EMPLOYER} audit streams; delete one first.`);
  }
  const url = await checkedUrl(ctx, input.url);
  const streamId = newAuditStreamId();
  const signingSecret = input.preset === 'ndjson' ? generateSigningSecret() : null;
  const sealedSecret = encryptSecret(signingSecret ?? input.token!, ctx.encryptionKey, streamId);
  const { position } = await runAuditStreamCommand(ctx, context, streamId, {
    type: 'CreateAuditStream', streamId, name: input.name, preset: input.preset, url, sealedSecret, start: input.start, now: new Date().toISOString(),
  });
  // Its first run reads once the audit read models have this very entry.
  await queueStreamRun(ctx.db.slonik, { streamId, employerId, mode: 'replace', ...(position ? { after: position } : {}) });
  return { streamId, signingSecret };
}

/** A change of destination, credential or status; a run is queued at once (a failing batch is tried again now). */
export async function updateAuditStream(
  ctx: AppContext,
  context: CommandContext,
  input: { streamId: string; name?: string; url?: string; token?: string; status?: AuditStreamStatus },
) {
  const { streamId, token, status, ...changes } = input;
  if (changes.url !== undefined) changes.url = await checkedUrl(ctx, changes.url);
  const result = await runAuditStreamCommand(ctx, context, streamId, {
    type: 'UpdateAuditStream',
    changes,
    ...(token === undefined ? {} : { sealedSecret: encryptSecret(token, ctx.encryptionKey, streamId) }),
    ...(status === undefined ? {} : { status }),
  });
  // The run reads once the audit read models have this change's own entry (a resume's above all):
  // the kick of that entry may come before the stream is active in its read model, and find nothing to queue.
  if (result.newEvents.length > 0) {
    await queueStreamRun(ctx.db.slonik, { streamId, employerId: employerOf(context), mode: 'replace', ...(result.position ? { after: result.position } : {}) });
  }
}

/** Nothing more is sent; a run is queued to remove the stream's cursor. */
export async function deleteAuditStream(ctx: AppContext, context: CommandContext, input: { streamId: string }) {
  await runAuditStreamCommand(ctx, context, input.streamId, { type: 'DeleteAuditStream' });
  await queueStreamRun(ctx.db.slonik, { streamId: input.streamId, employerId: employerOf(context), mode: 'replace' });
}
