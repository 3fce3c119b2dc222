// Issue 20, item 4: a ~690 KB junk SAMLResponse cost 1.6-2 s of XML parsing on the event loop, and the
// refusal limiter only peeked before that work, so six junk posts in parallel, inside the allowed
// burst, were all parsed and stalled every other tenant. Now: the address's token is spent when the
// request arrives, the body and the XML's shape are bounded before any parser runs, and parsing runs
// in the verifier's worker thread. The verifier runs its real module behind a gate the test holds
// (test/support/held-saml-verify-worker.ts), so "while a response is being verified" is a state the
// test controls, not a race.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { capabilities } from '../../src/capabilities.ts';
import { SAML_CALLBACK_BODY_LIMIT_BYTES } from '../../src/http/limits.ts';
import { createSsoCapability, ssoCapability } from '../../src/sso/capability.ts';
import { samlVerifierGate } from '../support/held-saml-verify-worker.ts';
import { createTestIdp } from '../support/saml-idp.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { enableSaml, recordSamlRefusals, type Tenant } from '../sso/sso-test-kit.ts';
import { waitUntil } from '../webhooks/helpers.ts';

const BURST = 6;
const RESPONSE_XMLNS = 'xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion"';
const base64 = (xml: string) => Buffer.from(xml).toString('base64');
/** Junk that passes every check before parsing: a Response of `elements` empty elements. */
const junkResponse = (elements: number) => base64(`<samlp:Response ${RESPONSE_XMLNS}>${'<a/>'.repeat(elements)}</samlp:Response>`);

let service: TestService;
let tenant: Tenant;
const gate = samlVerifierGate();

beforeAll(async () => {
  const sso = createSsoCapability({ callbackLimit: { perSecond: 0.0001, burst: BURST }, samlVerifier: gate.verifierOptions });
  service = await startTestService({
    env: { TRUST_PROXY: '127.0.0.1', SAML_VERIFY_THREADS: '1' },
    capabilities: capabilities.map((capability) => (capability.name === 'sso' ? sso : capability)),
  });
  tenant = await service.createTenant();
  await enableSaml(service, tenant, await createTestIdp());
});
afterAll(async () => {
  gate.release(1_000); // nothing stays held when the service stops
  await service?.stop();
});

function postFrom(address: string, samlResponse: string | { raw: string }) {
  return fetch(`${service.url}/api/auth/saml/callback/${tenant.employerId}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': address },
    body: typeof samlResponse === 'string' ? new URLSearchParams({ SAMLResponse: samlResponse }) : samlResponse.raw,
  });
}

/** The response's status once it arrives, and whether it has arrived yet. */
function track(response: Promise<Response>): { answered: boolean; status: Promise<number> } {
  const tracked = {
    answered: false,
    status: response.then((answer) => {
      tracked.answered = true;
      return answer.status;
    }),
  };
  return tracked;
}

describe('SAML callbacks within a CPU budget', () => {
  it('refuses the reproduced ~690 KB junk SAMLResponse by its size, before the body is read or anything parsed', async () => {
    const started = gate.started();
    const response = await postFrom('198.51.100.1', { raw: `SAMLResponse=${'PHNhbWxwOlJlc3BvbnNl'.repeat(34_500)}` });
    expect(response.status).toBe(413);
    expect(await response.json()).toMatchObject({ code: 'PAYLOAD_TOO_LARGE', limitBytes: SAML_CALLBACK_BODY_LIMIT_BYTES });
    expect(gate.started()).toBe(started);
  });

  it('refuses a response within the size bound that holds more elements or nesting than a SAML response, before any parser runs', async () => {
    const started = gate.started();
    const flat = await postFrom('198.51.100.2', junkResponse(40_000));
    expect(flat.status).toBe(401);
    expect(await flat.json()).toMatchObject({ code: 'SAML_RESPONSE_REJECTED', reason: 'MALFORMED', message: expect.stringContaining('more elements') });
    const deep = await postFrom('198.51.100.2', base64(`<samlp:Response ${RESPONSE_XMLNS}>${'<a>'.repeat(100)}${'</a>'.repeat(100)}</samlp:Response>`));
    expect(await deep.json()).toMatchObject({ reason: 'MALFORMED', message: expect.stringContaining('levels of nesting') });
    expect(gate.started()).toBe(started); // neither reached the verifier
  });

  it('answers another tenant while a junk response is being verified: the parsing is off the event loop', async () => {
    const other = await service.createTenant();
    const started = gate.started();
    const junk = track(postFrom('198.51.100.3', junkResponse(1_900)));
    await waitUntil('the junk response in the verifier', () => gate.started() > started);

    const session = await fetch(`${service.url}/api/auth/session`, { headers: { cookie: other.cookie } });
    expect(session.status).toBe(200);
    expect(junk.answered).toBe(false); // verified, and held in the worker thread until released

    gate.release();
    expect(await junk.status).toBe(401);
  });

  it('spends the address\'s token when the request arrives: with an allowance of 6, a 7th posted while the 6 are still being verified is refused unread', async () => {
    const started = gate.started();
    const inFlight = Array.from({ length: BURST }, () => track(postFrom('198.51.100.4', junkResponse(10))));
    // One being verified (and held), five waiting their turn: none parsed to the end.
    await waitUntil('the six junk responses in the verifier', () => service.servicesOf(ssoCapability).verifier.pending() === BURST);

    const seventh = await postFrom('198.51.100.4', junkResponse(10));
    expect(seventh.status).toBe(429);
    expect(await seventh.json()).toMatchObject({ code: 'RATE_LIMITED' });
    expect(inFlight.every((request) => !request.answered)).toBe(true);

    gate.release(BURST);
    expect(await Promise.all(inFlight.map((request) => request.status))).toEqual(Array(BURST).fill(401));
    expect(gate.started()).toBe(started + BURST);
    const { minutes } = await recordSamlRefusals(service);
    expect(minutes.filter((minute) => minute.employerId === tenant.employerId).reduce((sum, minute) => sum + minute.refusals, 0)).toBe(
      BURST + 3, // these six, and the three junk posts of the tests above (the 413 was never read)
    );
  });
});
