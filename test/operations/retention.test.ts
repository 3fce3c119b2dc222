// The daily retention job against rows aged by SQL: what is past its age goes, a batch at a time, and
// what is young, still pending or still valid stays; events and the audit chain are untouched; the run
// logs one line with the counts per table.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { operationsTasks, RETENTION_TASK } from '../../src/operations/tasks.ts';
import { pruneOperationalRows } from '../../src/operations/retention.ts';
import { startTestService, type TestService } from '../support/service.ts';

describe('retention', () => {
  const lines: string[] = [];
  let service: TestService;
  let employerId: string;
  const query = (text: string, values: unknown[] = []) => service.ctx.db.pg.query(text, values);
  const count = async (table: string, where = 'true') => Number((await query(`SELECT count(*) FROM ${table} WHERE ${where}`)).rows[0].count);

  beforeAll(async () => {
    service = await startTestService({ roles: ['api', 'projections'], logDestination: { write: (line: string) => void lines.push(line) } });
    ({ employerId } = await service.createTenant());
  }, 60_000);
  afterAll(async () => service?.stop());

  async function seed() {
    // Webhook deliveries: old and done (goes, with its attempts), old but pending (stays), young (stays).
    for (const [id, status, age] of [['old-done', 'succeeded', '31 days'], ['old-pending', 'pending', '31 days'], ['young', 'failed', '29 days']] as const) {
      const deliveryId = `00000000-0000-4000-8000-${id === 'old-done' ? '000000000001' : id === 'old-pending' ? '000000000002' : '000000000003'}`;
      await query(`INSERT INTO webhook_deliveries (delivery_id, employer_id, webhook_id, event_type, event_timestamp, data, trigger, status, created_at)
        VALUES ($1, $2, 'wh_retention', 'test', now(), '{}', 'test', $3, now() - $4::interval)`, [deliveryId, employerId, status, age]);
      await query(`INSERT INTO webhook_delivery_attempts (delivery_id, attempt, requested_at, latency_ms, status_code, response_body)
        VALUES ($1, 1, now() - $2::interval, 5, 200, '')`, [deliveryId, age]);
    }
    // Sessions and sign-in tokens: expired 8 days ago (go), expired 6 days ago (stay), ended 8 days ago (goes).
    for (const [id, expiresAgo, endedAgo] of [['s-expired', '8 days', null], ['s-recent', '6 days', null], ['s-ended', '-1 day', '8 days']] as const) {
      await query(`INSERT INTO sessions (session_hash, session_id, employer_id, user_id, created_at, expires_at, ended_at)
        VALUES ($1, $1, $2, 'usr_x', now() - interval '9 days', now() - $3::interval, now() - $4::interval)`, [id, employerId, expiresAgo, endedAgo]);
    }
    await query(`INSERT INTO signin_tokens (token_hash, token_id, employer_id, user_id, expires_at) VALUES
      ('t-old', 't-old', $1, 'usr_x', now() - interval '8 days'), ('t-recent', 't-recent', $1, 'usr_x', now() - interval '1 day')`, [employerId]);
    await query(`INSERT INTO idempotency_keys (employer_id, key_hash, request_hash, claim_id, created_at, expires_at) VALUES
      ($1, 'k-old', 'r', gen_random_uuid(), now() - interval '25 hours', now() - interval '1 hour'),
      ($1, 'k-live', 'r', gen_random_uuid(), now() - interval '23 hours', now() + interval '1 hour')`, [employerId]);
    await query(`INSERT INTO saml_requests (request_id, employer_id, expires_at) VALUES
      ('_old', $1, now() - interval '1 minute'), ('_live', $1, now() + interval '5 minutes')`, [employerId]);
    await query(`INSERT INTO scim_request_log (employer_id, request_id, received_at, method, path, status, duration_ms) VALUES
      ($1, 'old', now() - interval '31 days', 'GET', '/api/scim/v2/Users', 200, 3), ($1, 'young', now() - interval '29 days', 'GET', '/api/scim/v2/Users', 200, 3)`, [employerId]);
  }

  it('prunes what is past its age and keeps the rest, events and the audit chain included', async () => {
    await seed();
    const eventsBefore = await count('events');
    const chainBefore = await count('audit_chain');
    const task = operationsTasks(service.ctx)[RETENTION_TASK]!;
    await task(undefined as never, undefined as never);

    expect((await query(`SELECT status FROM webhook_deliveries WHERE webhook_id = 'wh_retention' ORDER BY status`)).rows.map((r) => r.status)).toEqual(['failed', 'pending']);
    // The pending delivery's old attempt goes (the log is 30 days), the delivery stays until it ends.
    expect(await count('webhook_delivery_attempts')).toBe(1);
    expect((await query(`SELECT session_id FROM sessions WHERE session_id LIKE 's-%' ORDER BY 1`)).rows.map((r) => r.session_id)).toEqual(['s-recent']);
    expect((await query(`SELECT token_id FROM signin_tokens WHERE token_id LIKE 't-%'`)).rows.map((r) => r.token_id)).toEqual(['t-recent']);
    expect((await query(`SELECT key_hash FROM idempotency_keys`)).rows.map((r) => r.key_hash)).toEqual(['k-live']);
    expect((await query(`SELECT request_id FROM saml_requests`)).rows.map((r) => r.request_id)).toEqual(['_live']);
    expect((await query(`SELECT request_id FROM scim_request_log`)).rows.map((r) => r.request_id)).toEqual(['young']);
    expect(await count('events')).toBe(eventsBefore);
    expect(await count('audit_chain')).toBeGreaterThanOrEqual(chainBefore);

    const run = lines.map((line) => JSON.parse(line)).find((entry) => entry.msg === 'retention run');
    expect(run.pruned).toMatchObject({
      webhook_delivery_attempts: 2, webhook_deliveries: 1, sessions: 2, signin_tokens: 1, idempotency_keys: 1, saml_requests: 1, scim_request_log: 1,
    });
    // Every table is named, pruned or not: the metrics count them all.
    expect(Object.keys(run.pruned)).toContain('smart_access_tokens');
    const counted = await service.ctx.metrics.registry.getSingleMetric('retention_pruned_rows_total')!.get();
    const prunedOf = (table: string) => counted.values.find((value) => value.labels.table === table)?.value;
    expect(prunedOf('webhook_delivery_attempts')).toBe(2);
    expect(prunedOf('smart_access_tokens')).toBe(0);
  });

  it('deletes in batches until nothing due is left', async () => {
    await query(`INSERT INTO scim_request_log (employer_id, request_id, received_at, method, path, status, duration_ms)
      SELECT $1, 'bulk-' || n, now() - interval '40 days', 'GET', '/api/scim/v2/Users', 200, 1 FROM generate_series(1, 25) n`, [employerId]);
    const pruned = await pruneOperationalRows(service.ctx.db.slonik, service.ctx.config, 10);
    expect(pruned.scim_request_log).toBe(25);
    expect(await count('scim_request_log', `request_id LIKE 'bulk-%'`)).toBe(0);
  });
});
