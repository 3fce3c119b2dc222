// A replay after an erasure still verifies. Crypto-shredding as the patients capability does it (on its
// own branch): personal fields travel in events only as AES-256-GCM ciphertext under the person's data
// key, kept outside the log; erasure destroys the key and appends an erasure event, changing no stored
// event. Simulated here with the same primitives (a data key table of the test's own, secret-box), so
// the chain's promise is held: it is over the stored ciphertext, which erasure leaves as it was.
// (After the merge, the patients capability's own erasure should be exercised here instead.)
import { createSecretKey, randomBytes } from 'node:crypto';
import { execFile } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditRecords, waitForSealing } from '../../src/audit/replay.ts';
import { verifyTenantChain } from '../../src/audit/verify.ts';
import { encryptSecret } from '../../src/crypto/secret-box.ts';
import { tenantStream } from '../../src/event-store/port.ts';
import { z } from 'zod';
import { capabilities } from '../../src/capabilities.ts';
import type { Capability } from '../../src/capability.ts';
import { eventSchema } from '../../src/event-store/schemas.ts';
import { startTestService, type TestService } from '../support/service.ts';

/** A person's events as the patients capability writes them: personal fields sealed, erasure without them. */
const personEvents: Capability = {
  name: 'test-persons',
  events: [
    eventSchema('TestPersonRegistered', z.object({ patientId: z.string(), sealed: z.string() })),
    eventSchema('TestPersonErased', z.object({ patientId: z.string() })),
  ],
};

const run = promisify(execFile);

describe('audit chain across an erasure', () => {
  let service: TestService;
  let db: pg.Client;
  beforeAll(async () => {
    service = await startTestService({ env: { AUDIT_CHECKPOINT_EVERY_EVENTS: '2' }, capabilities: [...capabilities, personEvents] });
    db = new pg.Client({ connectionString: service.ctx.config.DATABASE_URL });
    await db.connect();
    await db.query('CREATE TABLE test_person_keys (person_id text PRIMARY KEY, key bytea)');
  }, 60_000);
  afterAll(async () => {
    await db?.end();
    await service?.stop();
  });

  it('verifies before and after the person\'s key is destroyed, and the replay holds only ciphertext', async () => {
    const { employerId } = await service.createTenant();
    const personId = 'pat_1';
    const key = randomBytes(32);
    await db.query('INSERT INTO test_person_keys VALUES ($1, $2)', [personId, key]);
    const metadata = { tenantId: employerId, actor: { type: 'system' as const, id: 'test' }, correlationId: 'erasure-test', causationId: null, occurredAt: new Date().toISOString() };
    const stream = tenantStream(employerId, 'patient', personId);
    const sealed = encryptSecret(JSON.stringify({ name: 'Ada Lovelace', birthDate: '1815-12-10' }), createSecretKey(key), `${employerId}/${personId}`);
    await service.ctx.eventStore.appendToStream(stream, [{ type: 'TestPersonRegistered', data: { patientId: personId, sealed } }], { expectedRevision: 'no_stream', metadata });
    await waitForSealing(service.ctx);
    const before = await verifyTenantChain(service.ctx, employerId);
    if (!before.ok) throw new Error(`chain broken before the erasure: ${before.message}`);

    // Erasure: the key is destroyed first, then the fact is recorded; no stored event changes.
    await db.query('UPDATE test_person_keys SET key = NULL WHERE person_id = $1', [personId]);
    await service.ctx.eventStore.appendToStream(stream, [{ type: 'TestPersonErased', data: { patientId: personId } }], { expectedRevision: 0n, metadata });
    await waitForSealing(service.ctx);

    const after = await verifyTenantChain(service.ctx, employerId);
    expect(after).toMatchObject({ ok: true, events: before.events + 1 });
    let text = '';
    for await (const record of auditRecords(service.ctx, employerId)) text += `${JSON.stringify(record)}\n`;
    expect(text).toContain(sealed);
    expect(text).not.toContain('Lovelace');
    const { rows } = await db.query('SELECT key FROM test_person_keys WHERE person_id = $1', [personId]);
    expect(rows[0].key).toBeNull();

    const file = join(await mkdtemp(join(tmpdir(), 'ei-erasure-')), 'replay.ndjson');
    await writeFile(file, text);
    const { stdout } = await run(process.execPath, ['scripts/verify-audit-chain.mjs', file]);
    expect(stdout).toMatch(/^OK: \d+ events of /);
  }, 60_000);
});
