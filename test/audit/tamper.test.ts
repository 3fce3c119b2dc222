// Tamper evidence on a real database: as a superuser, past the append-only triggers, one tenant's stored
// event is changed, another's removed, two of a third's reordered; `events verify` names the first bad
// event each time, and the standalone verifier (scripts/verify-audit-chain.mjs, run as the auditor
// runs it) accepts the untouched tenant's replay and refuses each tampered one.
import { execFile } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditRecords, waitForSealing } from '../../src/audit/replay.ts';
import { verifyTenantChain } from '../../src/audit/verify.ts';
import { issueSignInToken } from '../../src/identity/commands.ts';
import { startTestService, type TestService } from '../support/service.ts';

const run = promisify(execFile);
const VERIFIER = 'scripts/verify-audit-chain.mjs';

describe('audit chain tamper evidence', () => {
  let service: TestService;
  let superuser: pg.Client;
  let dir: string;
  const tenants: Record<'untouched' | 'changed' | 'removed' | 'reordered' | 'chainRewritten', { employerId: string; events: Array<{ event_id: string; transaction_id: string }> }> = {} as never;

  /** The tenant's events in commit order, as stored. */
  const storedEvents = async (employerId: string) =>
    (await superuser.query<{ event_id: string; transaction_id: string }>(
      'SELECT event_id::text, transaction_id::text FROM events WHERE tenant_id = $1 ORDER BY events.transaction_id, events.global_position', [employerId])).rows;

  /** Runs `sql` with the append-only triggers off, as an operator with superuser rights could. */
  const pastTheTriggers = async (sql: string, params: unknown[]) => {
    await superuser.query('BEGIN');
    await superuser.query('ALTER TABLE events DISABLE TRIGGER events_no_update_or_delete');
    await superuser.query(sql, params);
    await superuser.query('ALTER TABLE events ENABLE TRIGGER events_no_update_or_delete');
    await superuser.query('COMMIT');
  };

  const replayFile = async (employerId: string) => {
    let text = '';
    for await (const record of auditRecords(service.ctx, employerId)) text += `${JSON.stringify(record)}\n`;
    const file = join(dir, `${employerId}.ndjson`);
    await writeFile(file, text);
    return { file, text };
  };

  const verifyOffline = (file: string) => run(process.execPath, [VERIFIER, file]).then(
    ({ stdout }) => ({ code: 0, stdout }),
    (error: { code: number; stdout: string }) => ({ code: error.code, stdout: error.stdout }),
  );

  beforeAll(async () => {
    // A checkpoint every 4 events, so replays carry signed checkpoints.
    // No worker: its 10-minute checkpoint job, firing mid-test, would sign a head between the every-4th ones.
    service = await startTestService({ env: { AUDIT_CHECKPOINT_EVERY_EVENTS: '4' }, roles: ['api', 'projections'] });
    superuser = new pg.Client({ connectionString: service.ctx.config.DATABASE_URL });
    await superuser.connect();
    dir = await mkdtemp(join(tmpdir(), 'ei-audit-replay-'));
    for (const name of ['untouched', 'changed', 'removed', 'reordered', 'chainRewritten'] as const) {
      const { employerId, adminUserId } = await service.createTenant();
      // Each sign-in link is its own command and transaction: 8 more events.
      for (let i = 0; i < 8; i += 1) await issueSignInToken(service.ctx, { tenantId: employerId, actor: { type: 'system', id: 'test' } }, { userId: adminUserId, via: 'cli' });
      tenants[name] = { employerId, events: [] };
    }
    await waitForSealing(service.ctx);
    for (const tenant of Object.values(tenants)) tenant.events = await storedEvents(tenant.employerId);
  }, 120_000);

  afterAll(async () => {
    await superuser?.end();
    await service?.stop();
  });

  it('an untouched history verifies, in the CLI\'s check and offline, checkpoints included', async () => {
    const { employerId, events } = tenants.untouched;
    const verified = await verifyTenantChain(service.ctx, employerId);
    expect(verified).toMatchObject({ ok: true, events: events.length, headSeq: events.length });
    // A checkpoint at every 4th event sealed since the last, however sealing batched them.
    const checkpointSeqs = (await service.ctx.db.pg.query('SELECT seq::int FROM audit_checkpoints WHERE employer_id = $1 ORDER BY seq', [employerId])).rows.map((row) => row.seq as number);
    expect(checkpointSeqs.length).toBeGreaterThanOrEqual(2);
    checkpointSeqs.forEach((seq, index) => expect(seq - (checkpointSeqs[index - 1] ?? 0)).toBeGreaterThanOrEqual(4));
    expect(verified.ok && verified.checkpoints).toBe(checkpointSeqs.length);

    const { file, text } = await replayFile(employerId);
    const lines = text.trim().split('\n').map((line) => JSON.parse(line));
    expect(lines.filter((line) => line.checkpoint).map((line) => line.checkpoint.seq)).toEqual(checkpointSeqs);
    expect(lines.filter((line) => line.eventId).map((line) => line.seq)).toEqual(events.map((_, index) => index + 1));
    const offline = await verifyOffline(file);
    expect(offline.code).toBe(0);
    expect(offline.stdout).toMatch(new RegExp(`^OK: ${events.length} events of ${employerId}, head seq ${events.length} hash ${verified.ok && verified.headHash}`));

    // From standard input, with the key pinned as the auditor fetched it from /api/audit/public-key.
    const keyFile = join(dir, 'audit-public.pem');
    await writeFile(keyFile, service.ctx.auditSigner.publicKey.export({ type: 'spki', format: 'pem' }).toString());
    const child = execFile(process.execPath, [VERIFIER, '--public-key', keyFile]);
    child.stdin!.end(text);
    let stdout = '';
    child.stdout!.on('data', (chunk) => (stdout += chunk));
    const code = await new Promise((resolve) => child.on('close', resolve));
    expect(code).toBe(0);
    expect(stdout).toContain(`${checkpointSeqs.length} signed checkpoint(s), the last at seq ${checkpointSeqs.at(-1)};`);
    expect(stdout).not.toMatch(/not pinned|pass --public-key/);
  });

  it('a changed event is named, and its replay refused', async () => {
    const { employerId, events } = tenants.changed;
    const target = events[5]!;
    await pastTheTriggers(`UPDATE events SET data = jsonb_set(data, '{via}', '"saml"') WHERE event_id = $1`, [target.event_id]);
    const result = await verifyTenantChain(service.ctx, employerId);
    expect(result).toMatchObject({ ok: false, reason: 'changed', eventId: target.event_id, seq: 6 });

    const offline = await verifyOffline((await replayFile(employerId)).file);
    expect(offline.code).toBe(1);
    expect(offline.stdout).toContain(`event ${target.event_id} (seq 6): changed`);
  });

  it('a removed event is named, and its replay refused', async () => {
    const { employerId, events } = tenants.removed;
    const target = events[3]!;
    await pastTheTriggers('DELETE FROM events WHERE event_id = $1', [target.event_id]);
    const result = await verifyTenantChain(service.ctx, employerId);
    expect(result).toMatchObject({ ok: false, reason: 'removed', eventId: target.event_id, seq: 4 });

    const offline = await verifyOffline((await replayFile(employerId)).file);
    expect(offline.code).toBe(1);
    expect(offline.stdout).toMatch(/removed: seq 4 is missing/);
  });

  it('removing the newest event is caught too (nothing follows it in a file, but the chain remembers it)', async () => {
    // After the untouched tenant's own test.
    const { employerId, events } = tenants.untouched;
    const last = events[events.length - 1]!;
    await pastTheTriggers('DELETE FROM events WHERE event_id = $1', [last.event_id]);
    expect(await verifyTenantChain(service.ctx, employerId)).toMatchObject({ ok: false, reason: 'removed', eventId: last.event_id, seq: events.length });
  });

  it('two swapped events are named as reordered, and their replay refused', async () => {
    const { employerId, events } = tenants.reordered;
    const [earlier, later] = [events[2]!, events[6]!];
    expect(earlier.transaction_id).not.toBe(later.transaction_id);
    // Commit order is (transaction_id, global_position): exchanging the transaction ids swaps the two.
    await pastTheTriggers(
      `UPDATE events SET transaction_id = CASE WHEN event_id = $1 THEN $4::xid8 ELSE $3::xid8 END WHERE event_id IN ($1, $2)`,
      [earlier.event_id, later.event_id, earlier.transaction_id, later.transaction_id],
    );
    const result = await verifyTenantChain(service.ctx, employerId);
    expect(result).toMatchObject({ ok: false, reason: 'reordered', eventId: later.event_id, seq: 7 });
    expect(result.ok || result.message).toContain(earlier.event_id);

    const offline = await verifyOffline((await replayFile(employerId)).file);
    expect(offline.code).toBe(1);
    expect(offline.stdout).toContain(`event ${later.event_id} (seq 7): reordered`);
  });

  it('an event changed together with its seal is caught by the signed checkpoint', async () => {
    const { employerId, events } = tenants.chainRewritten;
    const target = events[1]!;
    await pastTheTriggers(`UPDATE events SET data = jsonb_set(data, '{via}', '"saml"') WHERE event_id = $1`, [target.event_id]);
    // Whoever changed it recomputes the whole chain after it, but cannot sign a checkpoint.
    const { text } = await replayFile(employerId);
    let head = '0'.repeat(64);
    const { chainHash } = await import('../../projections/audit-chain/chain.ts');
    for (const record of text.trim().split('\n').map((line) => JSON.parse(line)).filter((line) => line.eventId)) {
      const hash = chainHash(head, { eventId: record.eventId, streamName: record.streamName, streamRevision: record.streamRevision, type: record.type, recordedAt: record.recordedAt, metadata: record.metadata, data: record.data });
      await superuser.query('UPDATE audit_chain SET prev_hash = $1, hash = $2 WHERE event_id = $3', [head, hash, record.eventId]);
      head = hash;
    }
    const result = await verifyTenantChain(service.ctx, employerId);
    expect(result).toMatchObject({ ok: false, reason: 'checkpoint', seq: null });
    const firstCheckpoint = (await superuser.query('SELECT min(seq)::int AS seq FROM audit_checkpoints WHERE employer_id = $1', [employerId])).rows[0].seq as number;
    expect(result.ok || result.message).toContain(`checkpoint at seq ${firstCheckpoint} does not match the chain`);
    expect((await verifyOffline((await replayFile(employerId)).file)).code).toBe(1);
  });

  it('events verify on the command line prints OK with the count and head, or the first bad event with exit 1', async () => {
    const env = { ...process.env, DATABASE_URL: service.ctx.config.DATABASE_URL!, DATA_DIR: service.ctx.config.DATA_DIR, LOG_LEVEL: 'silent', PUBLIC_BASE_URL: 'http://127.0.0.1:9' };
    const { employerId } = await service.createTenant();
    const events = await storedEvents(employerId);
    const ok = await run(process.execPath, ['src/cli.ts', 'events', 'verify', '--tenant', employerId], { env });
    expect(ok.stdout).toMatch(new RegExp(`^OK: ${events.length} events of ${employerId}, head seq ${events.length} hash [0-9a-f]{64}`));
    const broken = await run(process.execPath, ['src/cli.ts', 'events', 'verify', '--tenant', tenants.changed.employerId], { env }).catch((error) => error);
    expect(broken.code).toBe(1);
    expect(broken.stdout).toContain(`event ${tenants.changed.events[5]!.event_id} (seq 6): changed`);
  }, 60_000);
});
