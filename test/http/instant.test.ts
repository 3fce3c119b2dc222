// Instants from requests (src/http/instant.ts) against a real Postgres: whatever the check accepts,
// Postgres reads as the same instant, and so does the ISO text Date writes back for it; what Postgres
// would refuse (year 0000, an offset of 16 hours, 31 June) the check refuses, so it never reaches a
// query as a 500 (issue 20, item 8).
//
// Deterministic: the seed is fixed (FUZZ_SEED overrides it) and printed with any failure.
import fc from 'fast-check';
import { sql, type DatabasePool } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { instantMillis, instantSchema } from '../../src/http/instant.ts';
import { createPlatformToken } from '../../src/workflows/commands.ts';
import { errorShapeProblem } from '../support/error-shapes.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { dateTimeText } from '../support/dates.ts';
import { FUZZ_SEED } from '../support/openapi-fuzz.ts';
import { startTestService } from '../support/service.ts';

let database: TestDatabase;
let pool: DatabasePool;

beforeAll(async () => {
  database = await createTestDatabase();
  pool = database.db.slonik;
});
afterAll(async () => database?.cleanup());

/** Milliseconds since the epoch of `text` as Postgres reads it; undefined when it refuses it. */
async function postgresMillis(text: string): Promise<number | undefined> {
  try {
    const epoch = await pool.oneFirst(sql.type(z.object({ ms: z.string() }))`SELECT (extract(epoch FROM ${text}::timestamptz) * 1000)::text AS ms`);
    return Number(epoch);
  } catch {
    return undefined;
  }
}

describe('instants', () => {
  it('accepts a text only when Postgres reads it as the same instant, and reads the ISO text Date writes for it too', async () => {
    let accepted = 0;
    await fc.assert(
      fc.asyncProperty(dateTimeText, async (text) => {
        const millis = instantMillis(text);
        if (millis === undefined) return;
        accepted++;
        // Postgres rounds a fraction to microseconds, the check truncates it to milliseconds.
        expect(Math.abs((await postgresMillis(text))! - millis), text).toBeLessThanOrEqual(1);
        expect(await postgresMillis(new Date(millis).toISOString()), text).toBe(millis);
      }),
      { seed: FUZZ_SEED, numRuns: 400 },
    );
    // The generator reaches both sides of the line.
    expect(accepted).toBeGreaterThan(20);
  });

  it('refuses what Postgres refuses or Date reads as another year, and takes the ends of the range', async () => {
    for (const text of ['0000-01-01T00:00:00Z', '0001-01-01T00:30:00+01:00', '2024-01-01T00:00:00+16:00', '2024-06-31T00:00:00Z', '2024-01-01T24:00:00Z', '9999-12-31T23:59:59-10:00', '1', 'Tuesday']) {
      expect(instantMillis(text), text).toBeUndefined();
      expect(instantSchema.safeParse(text).success, text).toBe(false);
    }
    for (const text of ['0001-01-01T00:00:00Z', '9999-12-31T23:59:59.999Z', '2024-02-29T12:00:00+15:59', '2024-05-13 04:42:34.123+00']) {
      expect(instantMillis(text), text).toBe(await postgresMillis(text));
    }
  });
});

describe('routes that take an instant', () => {
  it('refuse one Postgres cannot hold with 400 in their shape: bodies, query parameters and paging cursors', async () => {
    const service = await startTestService();
    try {
      const tenant = await service.createTenant();
      const session = service.sessionHeaders(tenant.cookie);
      const platform = { authorization: `Bearer ${(await createPlatformToken(service.ctx, { tenantId: null, actor: { type: 'system', id: 'test' } }, { name: 'instants', families: ['authorization'] })).token}` };
      const cursorAt = (at: string) => Buffer.from(JSON.stringify([at, 'x'])).toString('base64url');
      const json = { 'content-type': 'application/json' };
      const calls: [string, RequestInit, string][] = [
        ['/api/employer/audit-events?from=0000-01-01T00:00:00Z', { headers: session }, 'VALIDATION_ERROR'],
        [`/api/employer/audit-events?to=${encodeURIComponent('2024-01-01T00:00:00+16:00')}`, { headers: session }, 'VALIDATION_ERROR'],
        ['/api/employer/api-keys', { method: 'POST', headers: { ...session, ...json }, body: JSON.stringify({ name: 'k', scopes: ['cohort:read'], expiresAt: '9999-12-31T23:59:59-10:00' }) }, 'VALIDATION_ERROR'],
        [`/api/employer/api-keys?cursor=${cursorAt('0000-01-01 00:00:00+00')}`, { headers: session }, 'INVALID_CURSOR'],
        [`/api/employer/webhooks?cursor=${cursorAt('1')}`, { headers: session }, 'INVALID_CURSOR'],
        [`/api/platform/v1/employers/${tenant.employerId}/authorizations`, { method: 'POST', headers: { ...platform, ...json }, body: JSON.stringify({ patientId: 'p', treatment: 't', justification: 'j', requestedAt: '0000-06-01T00:00:00Z' }) }, 'VALIDATION_ERROR'],
        ['/api/fhir/$export?_since=0000-01-01T00:00:00Z', { headers: { ...session, prefer: 'respond-async' } }, 'invalid'],
      ];
      const answers = [];
      for (const [path, init] of calls) {
        const response = await fetch(`${service.url}${path}`, init);
        const text = await response.text();
        const body = text === '' ? {} : JSON.parse(text);
        answers.push({ path, status: response.status, code: body.code ?? body.issue?.[0]?.code, shapeProblem: errorShapeProblem(path, response.status, response.headers.get('content-type') ?? '', text) });
      }
      expect(answers).toEqual(calls.map(([path, , code]) => ({ path, status: 400, code, shapeProblem: null })));
    } finally {
      await service.stop();
    }
  });
});
