// Operators' controls of projections in the real service. Skip: a parked event is left unapplied,
// kept with who, why and when, audited in its employer's log, and the events of its stream held
// behind it are applied. Pause and resume (from a CLI process, so across processes): a paused
// projection applies nothing, commands do not wait for it, status and /readyz name it (200
// degraded); resumed, it catches up from its checkpoint.
import pg from 'pg';
import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listParked } from '../../projections/parking.ts';
import { comparePositions, formatPosition, parsePosition } from '../../src/event-store/port.ts';
import { employerStream } from '../../src/tenants/employer.ts';
import type { Projection } from '../../src/event-store/projection.ts';
import { skipParkedEvent } from '../../src/operations/commands.ts';
import { readCheckpoint } from '../../projections/runner.ts';
import { resumeProjection } from '../../projections/operations.ts';
import { runCli } from '../support/cli.ts';
import { createTestDatabaseUri } from '../support/database.ts';
import { eventually } from '../support/eventually.ts';
import { startTestService, type TestService } from '../support/service.ts';

const POISONED_PREFIX = 'Poisoned';

/** Employers' names (refusing some by a CHECK constraint) and, in a second table, their admin-role mappings: two events of one stream. */
const probeProjection: Projection = {
  name: 'skip-probe',
  tables: ['skip_probe', 'skip_probe_mappings'],
  eventTypes: ['EmployerCreated', 'AdminRoleMappingSet'],
  awaitedByCommands: true,
  async apply(tx, events) {
    for (const event of events) {
      if (event.type === 'EmployerCreated') await tx.query(sql.unsafe`INSERT INTO skip_probe (employer_id, name) VALUES (${String(event.data.employerId)}, ${String(event.data.name)})`);
      else await tx.query(sql.unsafe`INSERT INTO skip_probe_mappings (employer_id) VALUES (${event.metadata.tenantId})`);
    }
  },
};

describe('projection operations', () => {
  let service: TestService;
  let databaseUri: string;
  const logLines: string[] = [];

  beforeAll(async () => {
    databaseUri = await createTestDatabaseUri();
    const client = new pg.Client({ connectionString: databaseUri });
    await client.connect();
    await client.query(`CREATE TABLE skip_probe (employer_id text PRIMARY KEY, name text NOT NULL CHECK (name NOT LIKE '${POISONED_PREFIX}%'));
      CREATE TABLE skip_probe_mappings (employer_id text PRIMARY KEY)`);
    await client.end();
    service = await startTestService({
      databaseUri,
      extraProjections: [probeProjection],
      // Long on purpose: a command waiting for a paused projection would wait it out, and say so in the log.
      env: { PROJECTION_WAIT_TIMEOUT_MS: '30000' },
      logDestination: { write: (line: string) => void logLines.push(line) },
    });
  });
  afterAll(async () => service?.stop());

  const cli = (...args: string[]) => runCli(service, args);
  const readiness = async () => {
    const response = await fetch(`${service.url}/readyz`);
    return { status: response.status, body: await response.json() };
  };
  const query = (text: string, values: unknown[] = []) => service.ctx.db.pg.query(text, values);
  const auditRows = async (employerId: string, action: string) =>
    (await query(`SELECT actor_type, actor_id, target_id, details FROM audit_log WHERE employer_id = $1 AND action = $2`, [employerId, action])).rows;

  it('skips a parked event: kept with who and why, audited, and its stream\'s held events applied', async () => {
    const poisoned = await service.createTenant({ name: `${POISONED_PREFIX} ${Date.now()}` });
    const mapping = await fetch(`${service.url}/api/employer/admin-role-mapping`, {
      method: 'PUT',
      headers: { ...service.sessionHeaders(poisoned.cookie), 'content-type': 'application/json' },
      body: JSON.stringify({ scimGroups: ['Admins'], samlAttribute: null, samlValues: [] }),
    });
    expect(mapping.status).toBe(200);
    expect(await eventually(async () => (await listParked(service.ctx.db.slonik, { projection: 'skip-probe', limit: 10 })).length === 2, 10_000)).toBe(true);
    const [failed, held] = await listParked(service.ctx.db.slonik, { projection: 'skip-probe', limit: 10 });
    expect(failed).toMatchObject({ event_type: 'EmployerCreated', tenant_id: poisoned.employerId });
    expect(held).toMatchObject({ event_type: 'AdminRoleMappingSet', attempts: 0 });
    const position = parsePosition(`${failed!.position_commit}/${failed!.position_prepare}`);

    // The CLI wants a reason, and a projection of this build.
    expect(await cli('projections', 'skip', 'tenants', formatPosition(position))).toMatchObject({ code: 2, stderr: expect.stringMatching(/--reason/) });
    // Only the event that failed can be skipped, not one waiting behind it.
    await expect(skipParkedEvent(service.ctx, { projection: probeProjection, position: parsePosition(`${held!.position_commit}/${held!.position_prepare}`), skippedBy: 'ops-alice', reason: 'x' }))
      .rejects.toMatchObject({ code: 'NOT_PARKED' });

    const { skipped, released } = await skipParkedEvent(service.ctx, { projection: probeProjection, position, skippedBy: 'ops-alice', reason: 'name refused by the probe; accepted as lost' });
    expect(skipped.event_id).toBe(failed!.event_id);
    expect(released).toEqual({ applied: 1, stillParked: 0 });
    expect(await listParked(service.ctx.db.slonik, { projection: 'skip-probe', limit: 10 })).toEqual([]);
    expect((await query(`SELECT employer_id FROM skip_probe_mappings WHERE employer_id = $1`, [poisoned.employerId])).rows).toHaveLength(1);
    expect((await query(`SELECT 1 FROM skip_probe WHERE employer_id = $1`, [poisoned.employerId])).rows).toHaveLength(0);
    const [record] = (await query(`SELECT event_id, skipped_by, reason, skipped_at, error FROM projection_skipped_events WHERE projection = 'skip-probe'`)).rows;
    expect(record).toMatchObject({ event_id: failed!.event_id, skipped_by: 'ops-alice', reason: 'name refused by the probe; accepted as lost', skipped_at: expect.any(Date) });
    expect(record.error).toMatch(/check constraint/);
    expect(await eventually(async () => (await auditRows(poisoned.employerId, 'projection.event_skipped')).length === 1, 10_000)).toBe(true);
    expect((await auditRows(poisoned.employerId, 'projection.event_skipped'))[0]).toMatchObject({
      actor_type: 'system', actor_id: 'operator:ops-alice', target_id: failed!.event_id,
      details: { projection: 'skip-probe', eventType: 'EmployerCreated', skippedBy: 'ops-alice', reason: 'name refused by the probe; accepted as lost' },
    });
    // Skipped once: the same position again is no parked event.
    await expect(skipParkedEvent(service.ctx, { projection: probeProjection, position, skippedBy: 'ops-alice', reason: 'again' })).rejects.toMatchObject({ code: 'NOT_PARKED' });
    expect(await readiness()).toEqual({ status: 200, body: { status: 'ok', database: 'ok' } });
  }, 60_000);

  it('pauses a projection across processes: nothing applied, commands do not wait for it, status and readyz say so; resumed, it catches up', async () => {
    const tenant = await service.createTenant();
    const paused = await cli('projections', 'pause', 'audit', '--reason', 'maintenance', '--by', 'ops-bob');
    expect(paused).toMatchObject({ code: 0, stdout: expect.stringMatching(/^audit paused/) });
    expect((await cli('projections', 'pause', 'audit')).stdout).toMatch(/paused already/);

    const claim = await fetch(`${service.url}/api/employer/email-domains`, {
      method: 'POST',
      headers: { ...service.sessionHeaders(tenant.cookie), 'content-type': 'application/json' },
      body: JSON.stringify({ domain: 'paused-audit.test' }),
    });
    expect(claim.status).toBe(201);
    // The command waited for email-domains (its claim is read back) but not for the paused audit log.
    expect(logLines.map((line) => JSON.parse(line)).filter((entry) => entry.msg === 'read models lag behind a command')).toEqual([]);
    expect(await auditRows(tenant.employerId, 'email_domain.claim')).toEqual([]);

    expect(await readiness()).toEqual({ status: 200, body: { status: 'degraded', database: 'ok', stalledProjections: [], lag: {}, parkedEvents: {}, pausedProjections: ['audit'] } });
    const status = JSON.parse((await cli('projections', 'status', '--json')).stdout);
    expect(status.projections.find((entry: { projection: string }) => entry.projection === 'audit').paused).toMatchObject({ by: 'ops-bob', reason: 'maintenance', at: expect.any(String) });
    expect(status.projections.find((entry: { projection: string }) => entry.projection === 'tenants').paused).toBeNull();
    expect(await auditRows(tenant.employerId, 'email_domain.claim')).toEqual([]);

    expect((await cli('projections', 'resume', 'audit')).stdout).toMatch(/audit resumed/);
    expect(await eventually(async () => (await auditRows(tenant.employerId, 'email_domain.claim')).length === 1, 15_000)).toBe(true);
    expect(await readiness()).toEqual({ status: 200, body: { status: 'ok', database: 'ok' } });
    expect((await cli('projections', 'resume', 'audit')).stdout).toMatch(/was not paused/);
  }, 120_000);

  it('finds a pause no runner heard of in the batch\'s transaction: nothing applied, the checkpoint kept', async () => {
    // Written without its announcement: only the check in the batch's transaction can see it.
    await query(`INSERT INTO projection_pauses (projection, paused_by) VALUES ('skip-probe', 'ops-carol')`);
    const tenant = await service.createTenant();
    expect((await query(`SELECT 1 FROM skip_probe WHERE employer_id = $1`, [tenant.employerId])).rows).toHaveLength(0);
    const [created] = await service.ctx.eventStore.readStream(employerStream(tenant.employerId));
    expect(comparePositions(await readCheckpoint(service.ctx.db.slonik, 'skip-probe'), created!.position)).toBeLessThan(0);
    expect(await resumeProjection(service.ctx.db.slonik, 'skip-probe')).toBe(true);
    expect(await eventually(async () => (await query(`SELECT 1 FROM skip_probe WHERE employer_id = $1`, [tenant.employerId])).rows.length === 1, 15_000)).toBe(true);
  });
});
