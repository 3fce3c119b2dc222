// The console's rotation and recovery controls in a real Chromium, against the whole service and a
// real HTTPS receiver: a key edited in place and rolled, a webhook secret rotated with an overlap and
// the overlap ended early, a subscription disabled by failures shown with why and since when, then
// re-enabled and its failed delivery recovered.
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey, keyHeaders } from '../support/api-keys.ts';
import { browserUnavailable, launchChromium, seriousAxeViolations, signedInPage } from '../support/browser.ts';
import type { HttpsReceiver } from '../support/https-receiver.ts';
import type { TestService } from '../support/service.ts';
import { startServiceWithReceiver } from '../support/service-with-receiver.ts';
import { apiClient, subscribe, waitUntil, type ApiClient } from '../webhooks/helpers.ts';

const unavailable = browserUnavailable();
if (unavailable) console.warn(`console end-to-end tests skipped: ${unavailable}`);

describe.skipIf(unavailable !== null)('rotation and recovery in the console', () => {
  let service: TestService;
  let receiver: HttpsReceiver;
  let stop: () => Promise<void>;
  let browser: Browser;
  let page: Page;
  let tenant: Awaited<ReturnType<TestService['createTenant']>>;
  let api: ApiClient;

  beforeAll(async () => {
    ({ service, receiver, stop } = await startServiceWithReceiver());
    tenant = await service.createTenant();
    api = apiClient(service, tenant);
    browser = await launchChromium();
    page = await signedInPage(browser, service.url, tenant.cookie);
  });
  afterAll(async () => {
    await browser?.close();
    await stop?.();
  });

  async function openPage(hash: string, heading: string) {
    // From elsewhere: going to the page's own hash again would not render it afresh.
    await page.goto('about:blank');
    await page.goto(`${service.url}/#/${hash}`);
    await page.getByRole('heading', { level: 1, name: heading }).waitFor();
  }

  it('edits a key in place and rolls it: the new key is shown once and works, the old one shows its end', async () => {
    const key = await createApiKey(service, tenant, { name: 'payroll', scopes: ['webhook:manage', 'fhir:read'] });
    await openPage('keys', 'API keys');
    await page.getByRole('button', { name: 'Edit payroll' }).click();
    const edit = page.getByRole('form', { name: 'Edit payroll' });
    await edit.locator('#edit-scope-fhir-read').uncheck();
    await edit.getByLabel('Rate limit per minute').fill('30');
    expect(await seriousAxeViolations(page)).toEqual([]);
    await edit.getByRole('button', { name: 'Save changes' }).click();
    await page.getByText('Key "payroll" changed; every server applies it within a second.').waitFor();
    expect((await api.get(`/api/employer/api-keys/${key.id}`)).body).toMatchObject({ scopes: ['webhook:manage'], rateLimitPerMinute: 30 });

    await page.getByRole('button', { name: 'Roll payroll' }).click();
    const roll = page.getByRole('form', { name: 'Roll payroll' });
    await roll.getByLabel('Overlap (hours)').fill('2');
    expect(await seriousAxeViolations(page)).toEqual([]);
    await roll.getByRole('button', { name: 'Roll key' }).click();
    const rawKey = (await page.getByTestId('secret').textContent()) ?? '';
    expect(rawKey).toMatch(/^mt_live_[0-9a-f]{64}$/);
    expect(await page.getByRole('region', { name: 'New key replacing "payroll"' }).textContent()).toContain('shown only this once');
    await page.getByText(/^rolled: revoked /).waitFor();
    expect((await fetch(`${service.url}/api/employer/webhooks`, { headers: keyHeaders(rawKey) })).status).toBe(200);
    expect((await fetch(`${service.url}/api/employer/webhooks`, { headers: keyHeaders(key.rawKey) })).status).toBe(200);
    expect(await page.getByRole('button', { name: 'Roll payroll' }).count()).toBe(1); // the new key's; the old one has none
  });

  it('rotates a webhook secret with an overlap, shows its end, and ends it early', async () => {
    const url = `${receiver.url}/console-rotation`;
    const { id } = await subscribe(api, url);
    await openPage('webhooks', 'Webhooks');
    await page.getByRole('button', { name: `Rotate secret of ${url}` }).click();
    const rotate = page.getByRole('form', { name: `Rotate the secret of ${url}` });
    await rotate.getByLabel('Overlap (hours)').fill('48');
    expect(await seriousAxeViolations(page)).toEqual([]);
    await rotate.getByRole('button', { name: 'Rotate secret' }).click();
    expect(await page.getByTestId('secret').textContent()).toMatch(/^whsec_/);
    expect(await page.getByRole('region', { name: `New signing secret of ${url}` }).textContent()).toContain('x-webhook-signature-next with the new one');
    await page.getByText(/^old secret signs until /).waitFor();
    const overlapEndsAt = (await api.get(`/api/employer/webhooks/${id}`)).body.signingSecretOverlapEndsAt as string;
    expect(Date.parse(overlapEndsAt) - Date.now()).toBeGreaterThan(47 * 3600_000);

    page.once('dialog', (dialog) => void dialog.accept());
    await page.getByRole('button', { name: `End the secret overlap of ${url}` }).click();
    await page.getByText(`Only the new secret signs deliveries to ${url} now.`).waitFor();
    expect((await api.get(`/api/employer/webhooks/${id}`)).body.signingSecretOverlapEndsAt).toBeNull();
    await page.getByRole('button', { name: `Rotate secret of ${url}` }).waitFor();
  });

  it('shows why and since when deliveries disabled a subscription, then re-enables it and recovers its failed delivery', async () => {
    const path = '/console-outage';
    const url = `${receiver.url}${path}`;
    const { id } = await subscribe(api, url, { maxFailures: 1 });
    receiver.respondWith((request) => (request.path === path ? { status: 503, body: 'down' } : { status: 200, body: 'ok' }));
    await api.post(`/api/employer/webhooks/${id}/ping`);
    const disabled = await waitUntil('auto-disable', async () => {
      const webhook = (await api.get(`/api/employer/webhooks/${id}`)).body;
      return webhook.status === 'inactive' && webhook;
    });

    await openPage('webhooks', 'Webhooks');
    const row = page.locator('tr', { hasText: url });
    expect(await row.textContent()).toContain('disabled after too many failed deliveries since');
    expect(disabled.disabledAt).toEqual(expect.any(String));

    receiver.respondWith(() => ({ status: 200, body: 'ok' }));
    const before = receiver.requests.filter((request) => request.path === path).length;
    await page.getByRole('button', { name: `Re-enable ${url}` }).click();
    await page.getByText(`${url} re-enabled.`).waitFor();
    await page.getByRole('button', { name: `Recover deliveries to ${url}` }).click();
    const recover = page.getByRole('form', { name: `Recover deliveries to ${url}` });
    // The outage began before the subscription was disabled: from an hour back.
    const hourBack = new Date(Date.now() - 3600_000);
    await recover.getByLabel('Failed since').fill(new Date(hourBack.getTime() - hourBack.getTimezoneOffset() * 60_000).toISOString().slice(0, 16));
    expect(await seriousAxeViolations(page)).toEqual([]);
    await recover.getByRole('button', { name: 'Recover' }).click();
    await page.getByText('1 failed deliveries are being sent again, in order, one at a time.').waitFor();
    await waitUntil('the failed delivery sent again', () => receiver.requests.filter((request) => request.path === path).length === before + 1);
    await waitUntil('the delivery to succeed', async () => ((await api.get(`/api/employer/webhooks/${id}/deliveries`)).body.deliveries as any[])[0]?.status === 'succeeded');
  }, 120_000);

  it('rotates the SCIM token with an overlap on the SSO page, shows its end and stops the previous token', async () => {
    const enabled = await api.post('/api/employer/sso', { scimEnabled: true });
    const previous = enabled.body.scimBearerToken as string;
    const scimStatus = async (token: string) => (await fetch(`${service.url}/api/scim/v2/Users`, { headers: { authorization: `Bearer ${token}` } })).status;
    await openPage('sso', 'Single sign-on');
    const rotate = page.getByRole('form', { name: 'Rotate the SCIM token' });
    await rotate.getByLabel('Overlap (hours)').fill('2');
    await rotate.getByRole('button', { name: 'Rotate SCIM token' }).click();
    await page.getByText('SCIM token rotated.').waitFor();
    const token = (await page.getByTestId('secret').textContent()) ?? '';
    expect(token).toMatch(/^scim_/);
    expect(await page.getByRole('region', { name: 'SCIM bearer token' }).textContent()).toContain('The previous token keeps working until');
    await page.getByTestId('scim-overlap').waitFor();
    expect(await seriousAxeViolations(page)).toEqual([]);
    expect([await scimStatus(previous), await scimStatus(token)]).toEqual([200, 200]);

    page.once('dialog', (dialog) => void dialog.accept());
    await page.getByRole('button', { name: 'Stop previous token' }).click();
    await page.getByText('The previous SCIM token has stopped working.').waitFor();
    expect(await page.getByTestId('scim-overlap').count()).toBe(0);
    expect([await scimStatus(previous), await scimStatus(token)]).toEqual([401, 200]);
  });
});
