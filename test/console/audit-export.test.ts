// The audit page's export in a real Chromium against the whole service: the entries' addresses shown,
// then the export downloaded as CSV (read with csv-parse) filtered by action, and as NDJSON filtered
// by a time range that excludes everything, each file what the API exports.
import { readFile } from 'node:fs/promises';
import { parse } from 'csv-parse/sync';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitForSealing } from '../../src/audit/replay.ts';
import { createApiKey } from '../support/api-keys.ts';
import { browserUnavailable, launchChromium, seriousAxeViolations, signedInPage } from '../support/browser.ts';
import { startTestService, type TestService } from '../support/service.ts';

const unavailable = browserUnavailable();
if (unavailable) console.warn(`console end-to-end tests skipped: ${unavailable}`);

describe.skipIf(unavailable !== null)('the audit export in the console', () => {
  let service: TestService;
  let browser: Browser;
  let page: Page;
  let tenant: Awaited<ReturnType<TestService['createTenant']>>;

  beforeAll(async () => {
    service = await startTestService();
    tenant = await service.createTenant();
    for (const name of ['payroll', 'benefits']) await createApiKey(service, tenant, { scopes: ['cohort:read'], name });
    await waitForSealing(service.ctx);
    browser = await launchChromium();
    page = await signedInPage(browser, service.url, tenant.cookie, { acceptDownloads: true });
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await service?.stop();
  });

  const download = async (link: ReturnType<Page['getByRole']>) => {
    const [downloaded] = await Promise.all([page.waitForEvent('download'), link.click()]);
    return { name: downloaded.suggestedFilename(), text: await readFile((await downloaded.path())!, 'utf8') };
  };

  it("shows each entry's address and downloads the export as CSV and NDJSON, filtered", async () => {
    await page.goto(`${service.url}/#/audit`);
    await page.getByRole('heading', { level: 1, name: 'Audit log' }).waitFor();
    await page.getByRole('cell', { name: '127.0.0.1' }).first().waitFor();

    const exportForm = page.getByRole('form', { name: 'Audit export' });
    await exportForm.getByLabel('Format').selectOption('csv');
    await exportForm.getByLabel('Action').fill('api_key.created');
    expect(await seriousAxeViolations(page)).toEqual([]);
    const csv = await download(exportForm.getByRole('link', { name: 'Download the export' }));
    expect(csv.name).toBe('audit-events.csv');
    const rows = parse(csv.text, { columns: true }) as Array<Record<string, string>>;
    expect(rows.map((row) => JSON.parse(row.details!).name)).toEqual(['payroll', 'benefits']);
    expect(rows.every((row) => row.action === 'api_key.created' && row.ipAddress === '127.0.0.1' && /^[0-9a-f]{64}$/.test(row.chainHash!))).toBe(true);

    await exportForm.getByLabel('Format').selectOption('ndjson');
    await exportForm.getByLabel('Action').fill('');
    const ndjson = await download(exportForm.getByRole('link', { name: 'Download the export' }));
    expect(ndjson.name).toBe('audit-events.ndjson');
    const entries = ndjson.text.trimEnd().split('\n').map((line) => JSON.parse(line) as { action: string });
    expect(entries.filter((entry) => entry.action === 'api_key.created')).toHaveLength(2);

    await exportForm.getByLabel('To').fill('2000-01-01T00:00');
    expect((await download(exportForm.getByRole('link', { name: 'Download the export' }))).text).toBe('');
  });
});
