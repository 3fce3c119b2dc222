// The console's administrator role mapping, a section of the SSO page, in a real Chromium against the
// whole service: it shows the mapping, saves a new one, and a SCIM group member it names becomes an
// administrator.
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { browserUnavailable, launchChromium, seriousAxeViolations, signedInPage } from '../support/browser.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { GROUP_SCHEMA, scimTenant } from '../scim/scim-client.ts';
import { scimUser, sessionRole } from '../tenants/admin-role-kit.ts';
import { eventually } from '../support/eventually.ts';

const unavailable = browserUnavailable();
if (unavailable) console.warn(`console end-to-end tests skipped: ${unavailable}`);

describe.skipIf(unavailable !== null)('the administrator role mapping section of the console', () => {
  let service: TestService;
  let browser: Browser;
  let page: Page;
  let tenant: Awaited<ReturnType<typeof scimTenant>>;

  beforeAll(async () => {
    service = await startTestService();
    tenant = await scimTenant(service);
    browser = await launchChromium();
    page = await signedInPage(browser, service.url, tenant.cookie);
  });
  afterAll(async () => {
    await browser?.close();
    await service?.stop();
  });

  it('shows the mapping, saves a new one, and its group members become administrators', async () => {
    const dana = await scimUser(tenant.scim, 'dana');
    expect((await tenant.scim.request('POST', '/Groups', { schemas: [GROUP_SCHEMA], displayName: 'Console Owners', members: [{ value: dana }] })).status).toBe(201);
    const danaCookie = await service.signIn(tenant.employerId, dana);

    await page.goto(`${service.url}/#/sso`);
    const section = page.getByRole('region', { name: 'Administrators from the identity provider' });
    await section.getByRole('heading', { name: 'Administrators from the identity provider' }).waitFor();
    expect(await section.getByRole('textbox', { name: 'SCIM groups' }).inputValue()).toBe('');
    expect(await seriousAxeViolations(page)).toEqual([]);

    await section.getByRole('textbox', { name: 'SCIM groups' }).fill('Console Owners\n\n');
    await section.getByRole('textbox', { name: 'SAML attribute' }).fill('groups');
    await section.getByRole('textbox', { name: 'SAML values' }).fill('console-admins\nit-admins');
    await section.getByRole('button', { name: 'Save mapping' }).click();
    await section.getByText('Administrator role mapping saved.').waitFor();
    expect(await eventually(async () => (await sessionRole(service, danaCookie)) === 'EMPLOYER_ADMIN', 2000)).toBe(true);

    // Shown as saved after a reload.
    await page.reload();
    await section.getByRole('heading', { name: 'Administrators from the identity provider' }).waitFor();
    expect(await section.getByRole('textbox', { name: 'SCIM groups' }).inputValue()).toBe('Console Owners');
    expect(await section.getByRole('textbox', { name: 'SAML attribute' }).inputValue()).toBe('groups');
    expect(await section.getByRole('textbox', { name: 'SAML values' }).inputValue()).toBe('console-admins\nit-admins');

    // A SAML value without an attribute is refused, and said so.
    await section.getByRole('textbox', { name: 'SAML attribute' }).fill('');
    await section.getByRole('button', { name: 'Save mapping' }).click();
    await section.getByText(/samlValues need a samlAttribute/).waitFor();
  });
});
