// The console's audit streams page in a real Chromium, against the whole service and a real HTTPS
// receiver: create an ndjson stream (its secret shown once) and see it catch up; a Splunk stream whose
// destination fails shows its lag and failure, then catches up; pause, resume, delete.
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { capabilitiesTrusting } from '../audit-streams/helpers.ts';
import { browserUnavailable, launchChromium, seriousAxeViolations, signedInPage } from '../support/browser.ts';
import { startHttpsReceiver, type HttpsReceiver } from '../support/https-receiver.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { waitUntil, webhookEnv } from '../webhooks/helpers.ts';

const unavailable = browserUnavailable();
if (unavailable) console.warn(`console end-to-end tests skipped: ${unavailable}`);

describe.skipIf(unavailable !== null)('the audit streams page of the console', () => {
  let receiver: HttpsReceiver;
  let service: TestService;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    receiver = await startHttpsReceiver();
    service = await startTestService({ env: webhookEnv({ AUDIT_STREAM_RETRY_BASE_MS: '200' }), capabilities: capabilitiesTrusting(receiver) });
    const { cookie } = await service.createTenant();
    browser = await launchChromium();
    page = await signedInPage(browser, service.url, cookie);
  });
  afterAll(async () => {
    await browser?.close();
    await service?.stop();
    await receiver?.close();
  });

  /** Refreshes the stream's row until its lag cell reads `text`. */
  const lagOf = (name: string, text: RegExp) => waitUntil(`${name} to read ${text}`, async () => {
    const row = page.getByRole('row', { name: new RegExp(`^${name} `) });
    await row.getByRole('button', { name: `Refresh ${name}` }).click();
    const lag = await row.getByTestId('lag').textContent();
    return text.test(lag ?? '') && row;
  });

  it('creates streams, shows their lag and failures, pauses, resumes and deletes them', async () => {
    await page.goto(`${service.url}/#/audit-streams`);
    await page.getByRole('heading', { name: 'Audit streams', level: 1 }).waitFor();
    expect(await page.getByRole('link', { name: 'Audit streams' }).getAttribute('aria-current')).toBe('page');
    const form = page.getByRole('form', { name: 'Create an audit stream' });

    // ndjson: no token asked; the signing secret shown once.
    await form.getByRole('textbox', { name: 'Name' }).fill('Archive');
    await form.getByRole('textbox', { name: 'HTTPS URL' }).fill(`${receiver.url}/archive`);
    expect(await form.getByLabel('Destination token').isVisible()).toBe(false);
    await form.getByRole('button', { name: 'Create stream' }).click();
    await page.getByText('Archive created: its entries are on their way.').waitFor();
    expect(await page.getByTestId('secret').textContent()).toMatch(/^whsec_/);
    await lagOf('Archive', /^up to date$/);
    expect(receiver.requests.some((request) => request.path === '/archive')).toBe(true);
    expect(await seriousAxeViolations(page)).toEqual([]);

    // Splunk, its destination down: the lag and the failure show; once it answers, it catches up.
    receiver.respondWith((request) => (request.path === '/services/collector/event' ? { status: 503, body: 'busy' } : { status: 200 }));
    await form.getByRole('textbox', { name: 'Name' }).fill('Splunk');
    await form.getByLabel('Format').selectOption('splunk_hec');
    await form.getByRole('textbox', { name: 'HTTPS URL' }).fill(receiver.url);
    await form.getByLabel('Destination token').fill('hec-token');
    await form.getByRole('button', { name: 'Create stream' }).click();
    await page.getByText('Splunk created: its entries are on their way.').waitFor();
    const failing = await lagOf('Splunk', /entries behind, oldest \d+ s$/);
    await waitUntil('the failure to show', async () => {
      await failing.getByRole('button', { name: 'Refresh Splunk' }).click();
      return (await failing.getByRole('cell').nth(5).textContent())?.includes('HTTP 503: busy');
    });
    receiver.respondWith(() => ({ status: 200 }));
    await lagOf('Splunk', /^up to date$/);

    // Pause and resume, then delete.
    await page.getByRole('button', { name: 'Pause Archive' }).click();
    await page.getByText('Archive paused.').waitFor();
    expect(await page.getByRole('row', { name: /^Archive / }).getByRole('cell').nth(2).textContent()).toBe('paused');
    await page.getByRole('button', { name: 'Resume Archive' }).click();
    await page.getByText('Archive resumed.').waitFor();
    page.once('dialog', (dialog) => void dialog.accept());
    await page.getByRole('button', { name: 'Delete Splunk' }).click();
    await page.getByText('Splunk deleted.').waitFor();
    expect(await page.getByRole('row', { name: /^Splunk / }).count()).toBe(0);
    expect(await seriousAxeViolations(page)).toEqual([]);
  });
});
