// The console's e-mail domains section in a real Chromium, against the whole service and a real DNS
// server: claim a domain, publish the TXT record the page shows, verify it, withdraw it.
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { browserUnavailable, launchChromium, seriousAxeViolations, signedInPage } from '../support/browser.ts';
import { startDnsServer, type TestDnsServer } from '../support/dns-server.ts';
import { startTestService, type TestService } from '../support/service.ts';

const unavailable = browserUnavailable();
if (unavailable) console.warn(`console end-to-end tests skipped: ${unavailable}`);

describe.skipIf(unavailable !== null)('the e-mail domains section of the console', () => {
  let dns: TestDnsServer;
  let service: TestService;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    dns = await startDnsServer();
    service = await startTestService({ env: { EMAIL_DOMAIN_DNS_SERVERS: dns.address } });
    const { cookie } = await service.createTenant();
    browser = await launchChromium();
    page = await signedInPage(browser, service.url, cookie);
  });
  afterAll(async () => {
    await browser?.close();
    await service?.stop();
    await dns?.stop();
  });

  it('claims a domain, shows the TXT record to publish, verifies it and withdraws it', async () => {
    await page.goto(`${service.url}/#/sso`);
    const section = page.getByRole('region', { name: 'E-mail domains' });
    await section.getByRole('heading', { name: 'E-mail domains' }).waitFor();

    await section.getByRole('textbox', { name: 'Domain' }).fill('Console-Domain.TEST');
    await section.getByRole('button', { name: 'Claim domain' }).click();
    await section.getByText('Domain claimed: publish its TXT record, then verify it.').waitFor();
    const row = section.getByRole('row', { name: /console-domain\.test/ });
    expect(await row.getByRole('cell').nth(1).textContent()).toBe('pending');
    const [recordName, recordValue] = await row.locator('code').allTextContents();
    expect(recordName).toBe('_employer-integrations.console-domain.test');
    expect(recordValue).toMatch(/^ei-verification=/);
    expect(await seriousAxeViolations(page)).toEqual([]);

    // Verifying before the record is published says what to publish; once it is, the claim is verified.
    await section.getByRole('button', { name: 'Verify console-domain.test' }).click();
    await section.getByText(/No TXT record .* was found at _employer-integrations\.console-domain\.test/).waitFor();
    dns.setTxt(recordName!, [recordValue!]);
    await section.getByRole('button', { name: 'Verify console-domain.test' }).click();
    await section.getByText('console-domain.test is verified.').waitFor();
    expect(await row.getByRole('cell').nth(1).textContent()).toMatch(/^verified /);
    expect(await section.getByRole('button', { name: 'Verify console-domain.test' }).count()).toBe(0);

    page.once('dialog', (dialog) => void dialog.accept());
    await section.getByRole('button', { name: 'Withdraw console-domain.test' }).click();
    await section.getByText('The claim on console-domain.test is withdrawn.').waitFor();
    await section.getByRole('cell', { name: 'None yet.' }).waitFor();
  });
});
