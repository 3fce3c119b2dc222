// The audit stream aggregate: stream tenant-<employerId>.auditStream-<ast_id>. Its destination
// credential travels only sealed (src/crypto/secret-box.ts, the stream id as associated data). How
// far it has delivered is not an event (it moves with every batch): it is the worker's cursor
// (audit_stream_cursors), beside ./delivery.ts.
import { DomainError, type Decider } from '../event-store/decider.ts';
import { tenantStream } from '../event-store/port.ts';
import type { AuditStreamEvent, AuditStreamPreset, AuditStreamStatus } from './events.ts';

export type AuditStreamCommand =
  | { type: 'CreateAuditStream'; streamId: string; name: string; preset: AuditStreamPreset; url: string; sealedSecret: string; start: 'earliest' | 'latest'; now: string }
  | { type: 'UpdateAuditStream'; changes: { name?: string; url?: string }; sealedSecret?: string; status?: AuditStreamStatus }
  | { type: 'DeleteAuditStream' };

export type AuditStreamState =
  | { status: 'absent' }
  | { status: 'deleted' }
  | { status: AuditStreamStatus; streamId: string; name: string; preset: AuditStreamPreset; url: string };

const notFound = () => new DomainError('not_found', 'NOT_FOUND', 'Audit stream was not found.');

export const auditStreamDecider: Decider<AuditStreamCommand, AuditStreamEvent, AuditStreamState> = {
  initialState: () => ({ status: 'absent' }),
  evolve: (state, event) => {
    if (event.type === 'AuditStreamCreated') {
      const { streamId, name, preset, url } = event.data;
      return { status: 'active', streamId, name, preset, url };
    }
    if (state.status === 'absent' || state.status === 'deleted') return state;
    switch (event.type) {
      case 'AuditStreamUpdated':
        return { ...state, ...event.data.changes };
      case 'AuditStreamPaused':
        return { ...state, status: 'paused' };
      case 'AuditStreamResumed':
        return { ...state, status: 'active' };
      case 'AuditStreamDeleted':
        return { status: 'deleted' };
      default:
        return state;
    }
  },
  decide: (command, state) => {
    if (command.type === 'CreateAuditStream') {
      if (state.status !== 'absent') throw new DomainError('conflict', 'CONFLICT', 'The audit stream already exists.');
      const { type: _type, now, ...data } = command;
      return [{ type: 'AuditStreamCreated', data: { ...data, createdAt: now } }];
    }
    if (state.status === 'absent' || state.status === 'deleted') throw notFound();
    const { streamId } = state;
    if (command.type === 'DeleteAuditStream') return [{ type: 'AuditStreamDeleted', data: { streamId } }];
    const events: AuditStreamEvent[] = [];
    const changes: { name?: string; url?: string } = {};
    if (command.changes.name !== undefined && command.changes.name !== state.name) changes.name = command.changes.name;
    if (command.changes.url !== undefined && command.changes.url !== state.url) changes.url = command.changes.url;
    if (Object.keys(changes).length > 0) events.push({ type: 'AuditStreamUpdated', data: { streamId, changes } });
    if (command.sealedSecret !== undefined) {
      // The generic preset's secret is ours, made at creation; only a vendor's credential is given.
      if (state.preset === 'ndjson') throw new DomainError('invalid', 'SECRET_NOT_SETTABLE', 'The ndjson preset signs with a secret the service made at creation; it takes no token.');
      events.push({ type: 'AuditStreamSecretReplaced', data: { streamId, sealedSecret: command.sealedSecret } });
    }
    if (command.status === 'paused' && state.status === 'active') events.push({ type: 'AuditStreamPaused', data: { streamId } });
    if (command.status === 'active' && state.status === 'paused') events.push({ type: 'AuditStreamResumed', data: { streamId } });
    return events;
  },
};

export const auditStreamStream = (employerId: string, streamId: string) => tenantStream(employerId, 'auditStream', streamId);
