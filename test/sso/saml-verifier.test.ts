// The SAML verifier's queue: responses wait their turn round-robin by client address, so one address
// posting junk delays another's login by one verification per turn, and waiting is bounded per address
// and in all. The worker is the real one behind a gate the test holds (one thread), so the order in
// which responses are served is the order in which the test's permits let them finish.
import { afterAll, describe, expect, it } from 'vitest';
import { createSamlVerifier, PER_CLIENT_WAITING_MAX, SamlVerifierBusyError, WAITING_MAX } from '../../src/sso/saml-verifier.ts';
import { samlVerifierGate } from '../support/held-saml-verify-worker.ts';
import { waitUntil } from '../webhooks/helpers.ts';

const gate = samlVerifierGate();
const verifier = createSamlVerifier({ threads: 1, ...gate.verifierOptions });
afterAll(async () => {
  gate.release(1_000);
  await verifier.close();
});

const settings = {
  employerId: 'emp_verifier', spEntityId: 'https://sp.example.test/metadata', acsUrl: 'https://sp.example.test/acs', idpEntryPoint: 'https://idp.example.test/sso',
  idpIssuer: 'https://idp.example.test', idpCertificates: ['MIIB'], clockSkewMs: 0, decryptionKeys: [],
};
const junk = Buffer.from('<samlp:Response xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol"/>').toString('base64');

/** Verifies junk for `client` and settles with its label once refused (or with the error that refused it before the queue). */
const submit = (client: string, label: string) =>
  verifier.verify(client, settings, junk).then(
    () => { throw new Error(`${label} was accepted`); },
    (error: unknown) => (error instanceof SamlVerifierBusyError ? error : label),
  );

describe('the SAML verifier queue', () => {
  it('serves waiting responses round-robin by client address, not first come first served', async () => {
    const started = gate.started();
    const a1 = submit('198.51.100.1', 'a1');
    await waitUntil('a1 in the worker', () => gate.started() === started + 1);
    const [a2, a3, b1] = [submit('198.51.100.1', 'a2'), submit('198.51.100.1', 'a3'), submit('198.51.100.2', 'b1')];

    gate.release();
    expect(await a1).toBe('a1');
    gate.release();
    expect(await a2).toBe('a2');
    gate.release();
    expect(await Promise.race([a3, b1])).toBe('b1'); // a3 came first, but a's turn had just been served
    gate.release();
    expect(await a3).toBe('a3');
  });

  it(`lets ${PER_CLIENT_WAITING_MAX} responses of one address wait (429 past that) and ${WAITING_MAX} in all (503 past that)`, async () => {
    const started = gate.started();
    const running = submit('203.0.113.1', 'running');
    await waitUntil('the first response in the worker', () => gate.started() === started + 1);
    const accepted = [running];
    for (let i = 0; i < PER_CLIENT_WAITING_MAX; i++) accepted.push(submit('203.0.113.1', `waiting ${i}`));
    const overClient = await submit('203.0.113.1', 'one too many');
    expect(overClient).toMatchObject({ kind: 'too_many', code: 'RATE_LIMITED', retryAfterSeconds: 1 });

    for (let client = 2; accepted.length <= WAITING_MAX; client++) {
      for (let i = 0; i < PER_CLIENT_WAITING_MAX && accepted.length <= WAITING_MAX; i++) accepted.push(submit(`203.0.113.${client}`, `${client}/${i}`));
    }
    expect(verifier.pending()).toBe(WAITING_MAX + 1); // one running, the rest waiting
    expect(await submit('203.0.113.200', 'one too many in all')).toMatchObject({ kind: 'unavailable', code: 'SAML_BUSY', retryAfterSeconds: 2 });

    gate.release(accepted.length);
    expect((await Promise.all(accepted)).every((outcome) => typeof outcome === 'string')).toBe(true);
    expect(verifier.pending()).toBe(0);
  });
});
