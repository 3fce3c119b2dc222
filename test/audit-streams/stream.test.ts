// The audit stream's rules, given / when / then, without a database; and the retry schedule.
import { describe, expect, it } from 'vitest';
import { retryDelayMs } from '../../src/audit-streams/delivery.ts';
import type { AuditStreamEvent } from '../../src/audit-streams/events.ts';
import { auditStreamDecider } from '../../src/audit-streams/stream.ts';
import { deciderSpec } from '../support/decider.ts';

const given = deciderSpec(auditStreamDecider);
const streamId = 'ast_1';
const created = (preset: 'ndjson' | 'splunk_hec' = 'splunk_hec'): AuditStreamEvent => ({
  type: 'AuditStreamCreated',
  data: { streamId, name: 'SIEM', preset, url: 'https://siem.example.com', sealedSecret: 'v1.a.b.c', start: 'earliest', createdAt: '2026-03-01T00:00:00.000Z' },
});
const paused: AuditStreamEvent = { type: 'AuditStreamPaused', data: { streamId } };

describe('audit stream decider', () => {
  it('creates once', () => {
    given([]).when({ type: 'CreateAuditStream', streamId, name: 'SIEM', preset: 'splunk_hec', url: 'https://siem.example.com', sealedSecret: 'v1.a.b.c', start: 'earliest', now: '2026-03-01T00:00:00.000Z' })
      .then([created()]);
    given([created()]).when({ type: 'CreateAuditStream', streamId, name: 'x', preset: 'ndjson', url: 'https://x.example', sealedSecret: 's', start: 'latest', now: 'n' })
      .thenThrows({ kind: 'conflict' });
  });

  it('records only what changed, and pauses and resumes once', () => {
    given([created()]).when({ type: 'UpdateAuditStream', changes: { name: 'SIEM', url: 'https://other.example.com' } })
      .then([{ type: 'AuditStreamUpdated', data: { streamId, changes: { url: 'https://other.example.com' } } }]);
    given([created()]).when({ type: 'UpdateAuditStream', changes: {}, status: 'paused' }).then([paused]);
    given([created(), paused]).when({ type: 'UpdateAuditStream', changes: {}, status: 'paused' }).then([]);
    given([created(), paused]).when({ type: 'UpdateAuditStream', changes: {}, status: 'active' }).then([{ type: 'AuditStreamResumed', data: { streamId } }]);
  });

  it("replaces a vendor's credential, never the ndjson preset's own secret", () => {
    given([created()]).when({ type: 'UpdateAuditStream', changes: {}, sealedSecret: 'v1.new' })
      .then([{ type: 'AuditStreamSecretReplaced', data: { streamId, sealedSecret: 'v1.new' } }]);
    given([created('ndjson')]).when({ type: 'UpdateAuditStream', changes: {}, sealedSecret: 'v1.new' }).thenThrows({ kind: 'invalid', code: 'SECRET_NOT_SETTABLE' });
  });

  it('refuses everything on a deleted or unknown stream', () => {
    const deleted: AuditStreamEvent = { type: 'AuditStreamDeleted', data: { streamId } };
    given([created()]).when({ type: 'DeleteAuditStream' }).then([deleted]);
    given([created(), deleted]).when({ type: 'UpdateAuditStream', changes: { name: 'x' } }).thenThrows({ kind: 'not_found' });
    given([]).when({ type: 'DeleteAuditStream' }).thenThrows({ kind: 'not_found' });
  });

  it('backs off by doubling up to 15 minutes, and honours a longer Retry-After', () => {
    expect([1, 2, 3, 4].map((failures) => retryDelayMs(failures, 5000, null))).toEqual([5000, 10_000, 20_000, 40_000]);
    expect(retryDelayMs(30, 5000, null)).toBe(15 * 60_000);
    expect(retryDelayMs(1, 5000, 60_000)).toBe(60_000);
  });
});
