// The service's sealing (projections/audit-chain/chain.ts, canonicalize package) and the standalone verifier
// (scripts/verify-audit-chain.mjs, its own RFC 8785 code) must agree on every JSON value, or an
// auditor's offline check would refuse a sound chain.
import { generateKeyPairSync } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson, chainHash, GENESIS_HASH, signCheckpoint, checkpointSignatureHolds } from '../../projections/audit-chain/chain.ts';
import * as standalone from '../../scripts/verify-audit-chain.mjs';

// JSON as Postgres jsonb hands it back: finite numbers, any strings (astral characters and lone
// surrogates included), nested objects and arrays.
const json = fc.jsonValue({ depthSize: 'small' });

describe('audit chain algorithm', () => {
  it('both RFC 8785 implementations serialise every JSON value identically', () => {
    fc.assert(fc.property(json, (value) => {
      expect(standalone.canonicalJson(value)).toBe(canonicalJson(value));
    }), { numRuns: 2000 });
  });

  it('matches RFC 8785 on its own example values', () => {
    // RFC 8785 section 3.2.2 / appendix: number forms and member order by UTF-16 code units.
    const value = { numbers: [333333333.33333329, 1e30, 4.50, 2e-3, 0.000000000000000000000000001], '\u20ac': 'Euro', '\r': 'CR', '1': 'One', '\u0080': 'Control', '\ud83d\ude00': 'Smiley', '\u00f6': 'o' };
    const expected = '{"\\r":"CR","1":"One","numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"\u0080":"Control","\u00f6":"o","\u20ac":"Euro","\ud83d\ude00":"Smiley"}';
    expect(canonicalJson(value)).toBe(expected);
    expect(standalone.canonicalJson(value)).toBe(expected);
  });

  it('both compute the same chain hashes and accept each other\'s checkpoint signatures', () => {
    fc.assert(
      fc.property(fc.record({ data: fc.dictionary(fc.string(), json), type: fc.string(), streamRevision: fc.nat() }), ({ data, type, streamRevision }) => {
        const sealed = { eventId: '0190f0a0-0000-7000-8000-000000000000', streamName: 'tenant-emp_x.user-u', streamRevision, type, recordedAt: '2026-11-23T08:00:00.000Z', metadata: { tenantId: 'emp_x' } as never, data };
        expect(standalone.chainHash(GENESIS_HASH, sealed)).toBe(chainHash(GENESIS_HASH, sealed));
      }),
      { numRuns: 500 },
    );
    const { privateKey, publicKey } = generateKeyPairSync('ed25519');
    const checkpoint = signCheckpoint(privateKey, { employerId: 'emp_x', seq: 1000, headHash: 'ab'.repeat(32), signedAt: '2026-11-23T08:00:00.000Z' });
    expect(checkpointSignatureHolds(publicKey, checkpoint)).toBe(true);
    expect(checkpointSignatureHolds(publicKey, { ...checkpoint, seq: 1001 })).toBe(false);
    expect(standalone.keyIdOf(publicKey)).toBe(checkpoint.keyId);
  });
});
