// The console's SCIM request log in a real Chromium, against the whole service: the IdP's requests
// (one refused) appear on the SSO page with their path, status and error, the e-mail provisioned
// nowhere on it; "Errors only" narrows the list; the page passes axe's serious rules.
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { browserUnavailable, launchChromium, seriousAxeViolations, signedInPage } from '../support/browser.ts';
import { eventually } from '../support/eventually.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { enableScim, filterPath, scimClient, USER_SCHEMA } from '../scim/scim-client.ts';

const unavailable = browserUnavailable();
if (unavailable) console.warn(`console end-to-end tests skipped: ${unavailable}`);

describe.skipIf(unavailable !== null)('the SCIM request log in the console', () => {
  let service: TestService;
  let browser: Browser;
  let page: Page;
  const email = `console-scim-${Math.random().toString(36).slice(2, 8)}@example.test`;

  beforeAll(async () => {
    service = await startTestService();
    const tenant = await service.createTenant();
    const scim = scimClient(service, await enableScim(service, tenant));
    expect((await scim.request('POST', '/Users', { schemas: [USER_SCHEMA], userName: email, emails: [{ value: email }] })).status).toBe(201);
    expect((await scim.request('GET', filterPath('Users', `userName eq "${email}"`))).status).toBe(200);
    expect((await scim.request('GET', filterPath('Users', 'nickName eq "x"'))).status).toBe(400);
    // Each entry is written once its response has gone.
    expect(await eventually(async () => Number((await service.ctx.db.pg.query('SELECT count(*) FROM scim_request_log')).rows[0].count) === 3, 10_000)).toBe(true);
    browser = await launchChromium();
    page = await signedInPage(browser, service.url, tenant.cookie);
  });
  afterAll(async () => {
    await browser?.close();
    await service?.stop();
  });

  it('lists the SCIM requests with their status and error, and narrows them to errors', async () => {
    await page.goto(`${service.url}/#/sso`);
    const section = page.getByRole('region', { name: 'SCIM request log' });
    await section.getByRole('heading', { name: 'SCIM request log' }).waitFor();
    const rows = section.getByRole('region', { name: 'SCIM requests' }).locator('tbody tr');
    expect(await rows.count()).toBe(3);
    expect(await rows.nth(2).locator('code').textContent()).toBe('POST /api/scim/v2/Users');
    expect(await rows.nth(1).locator('code').textContent()).toBe('GET /api/scim/v2/Users?filter=…');
    const refused = rows.nth(0);
    expect(await refused.getByRole('cell').nth(2).textContent()).toBe('400');
    expect(await refused.getByRole('cell').nth(3).textContent()).toMatch(/^invalidFilter: Filtering on nickName is not supported/);
    expect(await section.textContent()).not.toContain(email);
    expect(await seriousAxeViolations(page)).toEqual([]);

    await section.getByRole('checkbox', { name: 'Errors only' }).check();
    await rows.nth(1).waitFor({ state: 'detached' });
    expect(await rows.count()).toBe(1);
    expect(await rows.nth(0).getByRole('cell').nth(2).textContent()).toBe('400');
  });
});
