// A self-signed X.509 v3 certificate for a key pair of the service's own (the SAML service provider's
// signing and encryption key), written in DER by hand: Node can verify and read certificates but not
// make them, and SAML peers need only the certificate as a carrier of the public key (they pin it from
// metadata; no chain, no extensions). RSA keys, signed with SHA-256.
import { createSign, generateKeyPair, randomBytes, X509Certificate, type KeyObject } from 'node:crypto';
import { promisify } from 'node:util';

const SHA256_WITH_RSA = '1.2.840.113549.1.1.11';
const COMMON_NAME = '2.5.4.3';

function length(size: number): Buffer {
  if (size < 0x80) return Buffer.from([size]);
  const bytes: number[] = [];
  for (let rest = size; rest > 0; rest >>= 8) bytes.unshift(rest & 0xff);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}
const tlv = (tag: number, content: Buffer) => Buffer.concat([Buffer.from([tag]), length(content.length), content]);
const sequence = (...parts: Buffer[]) => tlv(0x30, Buffer.concat(parts));

function oid(dotted: string): Buffer {
  const [first = 0, second = 0, ...rest] = dotted.split('.').map(Number);
  const bytes = [40 * first + second];
  for (const arc of rest) {
    const base128 = [arc & 0x7f];
    for (let value = arc >> 7; value > 0; value >>= 7) base128.unshift(0x80 | (value & 0x7f));
    bytes.push(...base128);
  }
  return tlv(0x06, Buffer.from(bytes));
}

/** UTCTime until 2049, GeneralizedTime from 2050 (RFC 5280, 4.1.2.5). */
function time(date: Date): Buffer {
  const text = date.toISOString().replace(/[-:T]/g, '').slice(0, 14) + 'Z';
  return date.getUTCFullYear() < 2050 ? tlv(0x17, Buffer.from(text.slice(2), 'ascii')) : tlv(0x18, Buffer.from(text, 'ascii'));
}

const name = (commonName: string) => sequence(tlv(0x31, sequence(oid(COMMON_NAME), tlv(0x0c, Buffer.from(commonName, 'utf8')))));
const algorithm = sequence(oid(SHA256_WITH_RSA), Buffer.from([0x05, 0x00]));

export type SelfSignedKeyPair = { certificatePem: string; privateKeyPem: string };

/** A new RSA-2048 key pair (generated off the event loop) and its self-signed certificate for `commonName`, valid from `notBefore` to `notAfter`. */
export async function generateSelfSignedKeyPair(commonName: string, notBefore: Date, notAfter: Date): Promise<SelfSignedKeyPair> {
  const { publicKey, privateKey } = await promisify(generateKeyPair)('rsa', { modulusLength: 2048 });
  const serial = randomBytes(16);
  serial[0] = (serial[0]! & 0x7f) | 0x40; // positive and of full length
  const tbs = sequence(
    tlv(0xa0, tlv(0x02, Buffer.from([2]))), // v3
    tlv(0x02, serial),
    algorithm,
    name(commonName),
    sequence(time(notBefore), time(notAfter)),
    name(commonName),
    publicKey.export({ type: 'spki', format: 'der' }),
  );
  const signature = createSign('sha256').update(tbs).sign(privateKey);
  const der = sequence(tbs, algorithm, tlv(0x03, Buffer.concat([Buffer.from([0]), signature])));
  const certificate = new X509Certificate(der);
  return { certificatePem: certificate.toString().trim(), privateKeyPem: pemOf(privateKey) };
}

const pemOf = (key: KeyObject) => key.export({ type: 'pkcs8', format: 'pem' }).toString().trim();
