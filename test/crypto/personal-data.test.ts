// Sealing under a person's data key and the e-mail blind index, without a database.
import { createSecretKey, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { emailBlindIndex, openPersonal, PersonalDataErasedError, sealPersonal } from '../../src/crypto/personal-data.ts';

const serviceKey = createSecretKey(randomBytes(32));
const dataKey = createSecretKey(randomBytes(32));

describe('personal data', () => {
  it('opens only with the same key and context, and not at all once the key is gone', () => {
    const sealed = sealPersonal({ name: 'Ada Lovelace' }, dataKey, 'emp_1/Patient/p1');
    expect(sealed).not.toContain('Ada');
    expect(openPersonal(sealed, dataKey, 'emp_1/Patient/p1')).toEqual({ name: 'Ada Lovelace' });
    expect(() => openPersonal(sealed, dataKey, 'emp_1/Patient/p2')).toThrow();
    expect(() => openPersonal(sealed, createSecretKey(randomBytes(32)), 'emp_1/Patient/p1')).toThrow();
    expect(() => openPersonal(sealed, null, 'emp_1/Patient/p1')).toThrow(PersonalDataErasedError);
  });

  it('indexes e-mails blindly: case-insensitive, per employer, per service key', () => {
    const index = emailBlindIndex(serviceKey, 'emp_1', 'Ada@Example.test');
    expect(index).toBe(emailBlindIndex(serviceKey, 'emp_1', ' ada@example.TEST '));
    expect(index).not.toBe(emailBlindIndex(serviceKey, 'emp_2', 'ada@example.test'));
    expect(index).not.toBe(emailBlindIndex(createSecretKey(randomBytes(32)), 'emp_1', 'ada@example.test'));
    expect(index).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });
});
