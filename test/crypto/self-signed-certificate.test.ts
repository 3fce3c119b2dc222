import { createPrivateKey, createSign, createVerify, X509Certificate } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { generateSelfSignedKeyPair } from '../../src/crypto/self-signed-certificate.ts';

describe('generateSelfSignedKeyPair', () => {
  it.each([
    ['a UTCTime validity', new Date('2026-01-01T00:00:00Z'), new Date('2036-01-01T00:00:00Z')],
    ['a GeneralizedTime end (2050 on)', new Date('2026-01-01T00:00:00Z'), new Date('2056-06-30T12:34:56Z')],
  ])('makes a certificate that parses, verifies under its own key and carries the key pair (%s)', async (_name, notBefore, notAfter) => {
    const pair = await generateSelfSignedKeyPair('saml-sp employer_1', notBefore, notAfter);
    const certificate = new X509Certificate(pair.certificatePem);
    expect(certificate.subject).toBe('CN=saml-sp employer_1');
    expect(certificate.issuer).toBe(certificate.subject);
    expect(certificate.validFromDate.toISOString()).toBe(notBefore.toISOString());
    expect(certificate.validToDate.toISOString()).toBe(notAfter.toISOString());
    expect(certificate.verify(certificate.publicKey)).toBe(true);
    expect(certificate.checkPrivateKey(createPrivateKey(pair.privateKeyPem))).toBe(true);
    const signature = createSign('sha256').update('message').sign(pair.privateKeyPem);
    expect(createVerify('sha256').update('message').verify(certificate.publicKey, signature)).toBe(true);
  });

  it('gives every certificate its own key and serial number', async () => {
    const pairs = await Promise.all([1, 2].map(() => generateSelfSignedKeyPair('sp', new Date(), new Date(Date.now() + 86_400_000))));
    const [a, b] = pairs.map((pair) => new X509Certificate(pair.certificatePem));
    expect(a!.serialNumber).not.toBe(b!.serialNumber);
    expect(a!.fingerprint256).not.toBe(b!.fingerprint256);
  });
});
