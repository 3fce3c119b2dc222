// Data keys created on first use (users get theirs with their registration, or with their first change
// when registered before sealing): concurrent first uses agree on one key, and an erased person gets none.
import { createSecretKey, randomBytes, randomUUID } from 'node:crypto';
import { sql } from 'slonik';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dataKey, destroyDataKey, ensureDataKey } from '../../src/crypto/personal-data.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';

const serviceKey = createSecretKey(randomBytes(32));

describe('ensureDataKey', () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterAll(async () => database?.cleanup());

  it('creates one key however many first uses race, returns it afterwards, and none once erased', async () => {
    const subjectId = randomUUID();
    const keys = await Promise.all(Array.from({ length: 8 }, () => ensureDataKey(database.db.slonik, serviceKey, 'emp_keys', subjectId)));
    const exported = new Set(keys.map((key) => key!.export().toString('base64')));
    expect(exported.size).toBe(1);
    expect((await ensureDataKey(database.db.slonik, serviceKey, 'emp_keys', subjectId))!.export().toString('base64')).toBe([...exported][0]);
    expect((await dataKey(database.db.slonik, serviceKey, 'emp_keys', subjectId)).export().toString('base64')).toBe([...exported][0]);
    expect(await database.db.slonik.oneFirst(sql.type(z.object({ n: z.number() }))`
      SELECT count(*)::int AS n FROM personal_data_keys WHERE subject_id = ${subjectId}`)).toBe(1);

    await destroyDataKey(database.db.slonik, 'emp_keys', subjectId);
    expect(await ensureDataKey(database.db.slonik, serviceKey, 'emp_keys', subjectId)).toBeNull();
  });
});
