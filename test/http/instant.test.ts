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
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { dateTimeText } from '../support/dates.ts';
import { FUZZ_SEED } from '../support/openapi-fuzz.ts';

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
