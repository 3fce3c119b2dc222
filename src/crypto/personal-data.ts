// Personal data that can be erased from an append-only log (crypto-shredding). Every person (a
// patient) has a 256-bit data key of their own, kept in `personal_data_keys` outside the event log and
// sealed there with the service's ENCRYPTION_KEY. Events carry the person's personal and health fields
// only as ciphertext under that key (`sealPersonal`); erasure destroys the key, after which every copy
// of those events (log, backups, replays) holds nothing readable. Look-ups by e-mail use a keyed
// blind index (HMAC-SHA256 under a key derived from ENCRYPTION_KEY), never the address.
import { createHmac, createSecretKey, hkdfSync, randomBytes, type KeyObject } from 'node:crypto';
import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';
import { decryptSecret, encryptSecret } from './secret-box.ts';

/** What commands that seal personal data need: the database holding the data keys, and ENCRYPTION_KEY that wraps them. */
export type PersonalDataKeys = { db: CommonQueryMethods; encryptionKey: KeyObject };

/** What replay and the read models show for a field whose person has been erased. */
export const ERASED = '[erased]';

/** The data key of a person whose personal data has been erased: nothing sealed under it opens again. */
export class PersonalDataErasedError extends Error {
  override name = 'PersonalDataErasedError';
}

const keyRows = z.object({ subject_id: z.string(), wrapped_key: z.string().nullable() });

/** Associated data of a wrapped key: a sealed key copied onto another person's row does not open. */
const wrapContext = (employerId: string, subjectId: string) => `data-key/${employerId}/${subjectId}`;

function unwrap(row: z.infer<typeof keyRows>, employerId: string, encryptionKey: KeyObject): KeyObject | null {
  if (row.wrapped_key === null) return null;
  return createSecretKey(Buffer.from(decryptSecret(row.wrapped_key, encryptionKey, wrapContext(employerId, row.subject_id)), 'base64'));
}

/**
 * Creates a data key for each of `subjectIds` (new people, ids just minted) in one statement and
 * returns them. An id that already has a key is a caller's bug: refused rather than overwritten.
 */
export async function createDataKeys(db: CommonQueryMethods, encryptionKey: KeyObject, employerId: string, subjectIds: readonly string[]): Promise<Map<string, KeyObject>> {
  if (subjectIds.length === 0) return new Map();
  const raw = subjectIds.map(() => randomBytes(32));
  const wrapped = subjectIds.map((subjectId, index) => encryptSecret(raw[index]!.toString('base64'), encryptionKey, wrapContext(employerId, subjectId)));
  const inserted = await db.oneFirst(sql.type(z.object({ count: z.number() }))`
    WITH inserted AS (
      INSERT INTO personal_data_keys (employer_id, subject_id, wrapped_key)
      SELECT ${employerId}, s, k FROM unnest(${sql.array([...subjectIds], 'text')}::text[], ${sql.array(wrapped, 'text')}::text[]) AS t(s, k)
      ON CONFLICT (employer_id, subject_id) DO NOTHING RETURNING 1)
    SELECT count(*)::int AS count FROM inserted`);
  if (inserted !== subjectIds.length) throw new Error('A data key exists already for a subject said to be new');
  return new Map(subjectIds.map((subjectId, index) => [subjectId, createSecretKey(raw[index]!)]));
}

/**
 * A person's data key, created on first use (users registered before their data was sealed have
 * none until their first change): one statement either way. null when the person was erased.
 */
export async function ensureDataKey(db: CommonQueryMethods, encryptionKey: KeyObject, employerId: string, subjectId: string): Promise<KeyObject | null> {
  const raw = randomBytes(32);
  const wrapped = encryptSecret(raw.toString('base64'), encryptionKey, wrapContext(employerId, subjectId));
  // The outer SELECT does not see the CTE's insert (one snapshot): a new key comes from `inserted`, an
  // existing one from the table; neither when a concurrent first use committed after the snapshot
  // (the insert then conflicts with a row the snapshot misses): the next statement sees that row.
  // The statement commits without waiting for the WAL flush (synchronous_commit off for its own
  // transaction): a key is used only by events appended after it, whose commit flushes the WAL up to
  // theirs, this one included, so no durable event can refer to a lost key; and one commit wait less
  // per registration.
  const row = await db.maybeOne(sql.type(keyRows)`
    WITH relaxed AS (SELECT set_config('synchronous_commit', 'off', true)),
    inserted AS (
      INSERT INTO personal_data_keys (employer_id, subject_id, wrapped_key) SELECT ${employerId}, ${subjectId}, ${wrapped} FROM relaxed
      ON CONFLICT (employer_id, subject_id) DO NOTHING RETURNING subject_id, wrapped_key)
    SELECT subject_id, wrapped_key FROM inserted
    UNION ALL
    SELECT subject_id, wrapped_key FROM personal_data_keys WHERE employer_id = ${employerId} AND subject_id = ${subjectId}`);
  if (!row) return ensureDataKey(db, encryptionKey, employerId, subjectId);
  return row.wrapped_key === wrapped ? createSecretKey(raw) : unwrap(row, employerId, encryptionKey);
}

/** The data keys of `subjectIds`: null for an erased person; absent for one that never had a key. */
export async function dataKeys(db: CommonQueryMethods, encryptionKey: KeyObject, employerId: string, subjectIds: readonly string[]): Promise<Map<string, KeyObject | null>> {
  const keys = new Map<string, KeyObject | null>();
  if (subjectIds.length === 0) return keys;
  const rows = await db.any(sql.type(keyRows)`
    SELECT subject_id, wrapped_key FROM personal_data_keys
    WHERE employer_id = ${employerId} AND subject_id = ANY(${sql.array([...new Set(subjectIds)], 'text')})`);
  for (const row of rows) keys.set(row.subject_id, unwrap(row, employerId, encryptionKey));
  return keys;
}

/** One person's data key; PersonalDataErasedError when erased, an Error when the person has none. */
export async function dataKey(db: CommonQueryMethods, encryptionKey: KeyObject, employerId: string, subjectId: string): Promise<KeyObject> {
  const key = (await dataKeys(db, encryptionKey, employerId, [subjectId])).get(subjectId);
  if (key === null) throw new PersonalDataErasedError(`Personal data of ${subjectId} was erased`);
  if (key === undefined) throw new Error(`No data key for ${subjectId}`);
  return key;
}

/** Destroys a person's data key (idempotent). Returns when it was erased. */
export async function destroyDataKey(db: CommonQueryMethods, employerId: string, subjectId: string): Promise<string> {
  return db.oneFirst(sql.type(z.object({ erased_at: z.string() }))`
    INSERT INTO personal_data_keys (employer_id, subject_id, wrapped_key, erased_at) VALUES (${employerId}, ${subjectId}, NULL, now())
    ON CONFLICT (employer_id, subject_id) DO UPDATE SET wrapped_key = NULL, erased_at = coalesce(personal_data_keys.erased_at, now())
    RETURNING erased_at`);
}

/** Seals a person's fields (any JSON value) under their data key; `context` binds it to its place (stream, resource). */
export function sealPersonal(value: unknown, key: KeyObject, context: string): string {
  return encryptSecret(JSON.stringify(value), key, context);
}

/** Opens what `sealPersonal` sealed; PersonalDataErasedError when the key is gone (null). */
export function openPersonal<T>(sealed: string, key: KeyObject | null | undefined, context: string): T {
  if (!key) throw new PersonalDataErasedError('Personal data was erased');
  return JSON.parse(decryptSecret(sealed, key, context)) as T;
}

/**
 * The keyed blind index of an e-mail address within one employer: equal for equal addresses (case
 * ignored), meaningless without ENCRYPTION_KEY, and different across employers (no linking of one
 * person between employers).
 */
export function emailBlindIndex(encryptionKey: KeyObject, employerId: string, email: string): string {
  return createHmac('sha256', blindIndexKey(encryptionKey)).update(`${employerId}\n${email.trim().toLowerCase()}`, 'utf8').digest('base64url');
}

const blindIndexKeys = new WeakMap<KeyObject, Buffer>();
/** A key for blind indexes only, derived from ENCRYPTION_KEY (HKDF), so it is never the encryption key itself. */
function blindIndexKey(encryptionKey: KeyObject): Buffer {
  let key = blindIndexKeys.get(encryptionKey);
  if (!key) {
    key = Buffer.from(hkdfSync('sha256', encryptionKey.export(), Buffer.alloc(0), 'employer-integrations e-mail blind index', 32));
    blindIndexKeys.set(encryptionKey, key);
  }
  return key;
}

/** Which of `subjectIds` have been erased. */
export async function erasedSubjects(db: CommonQueryMethods, employerId: string, subjectIds: readonly string[]): Promise<Set<string>> {
  if (subjectIds.length === 0) return new Set();
  const rows = await db.anyFirst(sql.type(z.object({ subject_id: z.string() }))`
    SELECT subject_id FROM personal_data_keys
    WHERE employer_id = ${employerId} AND subject_id = ANY(${sql.array([...new Set(subjectIds)], 'text')}) AND wrapped_key IS NULL`);
  return new Set(rows);
}
