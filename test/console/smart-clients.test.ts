// The console's SMART clients page in a real Chromium, against the whole service: a pasted private key
// is refused before anything is sent, a pasted public key set registers a client that then obtains a
// token, and revoking it ends that.
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { browserUnavailable, launchChromium, seriousAxeViolations, signedInPage } from '../support/browser.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { clientAssertion, requestToken, smartClientKey } from '../support/smart-clients.ts';

const unavailable = browserUnavailable();
if (unavailable) console.warn(`console end-to-end tests skipped: ${unavailable}`);

describe.skipIf(unavailable !== null)('the SMART clients page of the console', () => {
  let service: TestService;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    service = await startTestService();
    const { cookie } = await service.createTenant();
    browser = await launchChromium();
    page = await signedInPage(browser, service.url, cookie);
  });
  afterAll(async () => {
    await browser?.close();
    await service?.stop();
  });

  it('registers a client from a pasted JWK Set, lists it, and revokes it', async () => {
    await page.goto(`${service.url}/#/smart-clients`);
    await page.getByRole('heading', { name: 'Register a client' }).waitFor();
    const key = await smartClientKey('ES384');

    await page.getByRole('textbox', { name: 'Name' }).fill('Bulk export job');
    await page.getByRole('textbox', { name: 'JWK Set (public keys)' }).fill(JSON.stringify({ keys: [{ ...key.publicJwk, d: 'private' }] }));
    await page.getByRole('button', { name: 'Register client' }).click();
    await page.getByText('Correct the key set first.').waitFor();

    await page.getByRole('textbox', { name: 'JWK Set (public keys)' }).fill(JSON.stringify({ keys: [key.publicJwk] }));
    await page.getByRole('textbox', { name: 'Scopes' }).fill('system/Patient.rs system/Observation.rs');
    await page.getByRole('button', { name: 'Register client' }).click();
    const registered = await page.getByText(/Client "Bulk export job" registered: its client id is smart_/).textContent();
    const clientId = /(smart_[0-9a-f]+)/.exec(registered!)![1]!;
    const row = page.getByRole('row', { name: /Bulk export job/ });
    expect(await row.getByRole('cell').nth(2).textContent()).toBe('active');
    expect(await row.getByRole('cell').nth(4).textContent()).toBe(key.kid);
    expect(await seriousAxeViolations(page)).toEqual([]);

    // The registered client obtains a token with the key whose public half was pasted.
    const client = { clientId, key, body: {} };
    expect((await requestToken(service, await clientAssertion(service, client), 'system/Patient.rs')).status).toBe(200);

    page.once('dialog', (dialog) => void dialog.accept());
    await page.getByRole('button', { name: 'Revoke Bulk export job' }).click();
    await page.getByText('Client "Bulk export job": revoked.').waitFor();
    expect(await row.getByRole('cell').nth(2).textContent()).toBe('revoked');
    expect((await requestToken(service, await clientAssertion(service, client), 'system/Patient.rs')).body.error).toBe('invalid_client');
  });
});
