// The admin console end to end: a real Chromium (Debian's package, driven by playwright-core) against
// the whole service and a real HTTPS webhook receiver. Every page is checked with axe-core and
// screenshotted at 1280x800 and at a phone's size (test-artifacts/console/, gitignored).
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONSOLE_CSP } from '../../src/console/plugin.ts';
import { issueSignInToken } from '../../src/identity/commands.ts';
import { createEmployer } from '../../src/tenants/commands.ts';
import { createApiKey, keyHeaders } from '../support/api-keys.ts';
import { browserUnavailable, launchChromium, seriousAxeViolations } from '../support/browser.ts';
import { createTestIdp } from '../support/saml-idp.ts';
import type { HttpsReceiver } from '../support/https-receiver.ts';
import type { TestService } from '../support/service.ts';
import { startServiceWithReceiver } from '../support/service-with-receiver.ts';
import { waitUntil } from '../webhooks/helpers.ts';

const ARTIFACTS = join(import.meta.dirname, '..', '..', 'test-artifacts', 'console');
const VIEWPORTS = { desktop: { width: 1280, height: 800 }, phone: { width: 390, height: 844 } };
const unavailable = browserUnavailable();
if (unavailable) console.warn(`console end-to-end tests skipped: ${unavailable}`);

describe.skipIf(unavailable !== null)('the admin console in Chromium', () => {
  let service: TestService;
  let receiver: HttpsReceiver;
  let stop: () => Promise<void>;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  const cspViolations: string[] = [];
  const adminEmail = `console-admin-${process.pid}@example.test`;
  let employerId: string;
  let adminUserId: string;

  beforeAll(async () => {
    ({ service, receiver, stop } = await startServiceWithReceiver());
    ({ employerId, adminUserId } = await createEmployer(service.ctx, { tenantId: null, actor: { type: 'system', id: 'test' } }, { name: 'Console Co', adminEmail }));
    browser = await launchChromium();
    context = await browser.newContext({ viewport: VIEWPORTS.desktop, acceptDownloads: true });
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: service.url });
    page = await context.newPage();
    page.setDefaultTimeout(20_000);
    page.on('console', (message) => {
      if (message.type() === 'error' && /Content[- ]Security[- ]Policy/i.test(message.text())) cspViolations.push(message.text());
    });
    await mkdir(ARTIFACTS, { recursive: true });
  });
  afterAll(async () => {
    await browser?.close();
    await stop?.();
  });

  /** The page meets axe-core's serious and critical rules at both sizes; a screenshot of each is kept. */
  async function checkPage(name: string) {
    for (const [size, viewport] of Object.entries(VIEWPORTS)) {
      await page.setViewportSize(viewport);
      await page.screenshot({ path: join(ARTIFACTS, `${name}-${size}.png`), fullPage: true });
      expect(await seriousAxeViolations(page), `${name} at ${size}`).toEqual([]);
    }
    await page.setViewportSize(VIEWPORTS.desktop);
  }

  async function openPage(hash: string, heading: string) {
    await page.goto(`${service.url}/#/${hash}`);
    await page.getByRole('heading', { level: 1, name: heading }).waitFor();
  }

  it('serves the console at / under a strict Content-Security-Policy', async () => {
    const response = await fetch(`${service.url}/`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-security-policy')).toBe(CONSOLE_CSP);
    expect(CONSOLE_CSP).toContain("script-src 'self'");
    const html = await response.text();
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/); // no inline script
    expect((await fetch(`${service.url}/console/app.js`)).headers.get('content-type')).toMatch(/javascript/);
  });

  it('shows the sign-in page without a session', async () => {
    await page.goto(`${service.url}/`);
    await page.getByRole('heading', { level: 1, name: 'Sign in' }).waitFor();
    await checkPage('sign-in');
  });

  it('signs in with a one-time link, confirmed on its page with the keyboard, and shows the user and employer', async () => {
    const { signInUrl } = await issueSignInToken(service.ctx, { tenantId: employerId, actor: { type: 'system', id: 'test' } }, { userId: adminUserId, via: 'cli' });
    await page.goto(`${signInUrl}&next=${encodeURIComponent('/')}`);
    // Opening the link signs nobody in: its page names the account and waits for the button.
    await page.getByRole('heading', { level: 1, name: 'Sign in' }).waitFor();
    expect(await page.getByRole('button', { name: `Sign in as ${adminEmail}` }).isVisible()).toBe(true);
    expect(await context.cookies()).toEqual([]);
    await checkPage('sign-in-link');
    // The button has the focus: Enter posts the form.
    expect(await page.evaluate<string | undefined>("document.activeElement?.textContent ?? undefined")).toBe(`Sign in as ${adminEmail}`);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { level: 1, name: 'API keys' }).waitFor();
    expect(await page.getByTestId('user').textContent()).toBe(adminEmail);
    expect(await page.locator('header').textContent()).toContain(employerId);
  });

  let rawKey = '';
  it('creates a key with the keyboard alone, shows it once, and the key works against the API', async () => {
    await openPage('keys', 'API keys');
    // Tab from the top of the page to the name field, type, tick the first scope with Space, submit with Enter.
    await page.locator('body').focus();
    await waitUntil('the name field to get focus', async () => {
      await page.keyboard.press('Tab');
      return page.evaluate<boolean>("document.activeElement?.name === 'name'");
    }, 10_000);
    await page.keyboard.type('console key');
    await page.keyboard.press('Tab');
    await page.keyboard.press('Space');
    expect(await page.locator('#scope-cohort-read').isChecked()).toBe(true);
    await page.locator('#scope-webhook-manage').check();
    await page.getByLabel('IP allowlist (optional)').fill('not-an-address');
    expect(await page.locator('[aria-invalid="true"] + small, .field small.error').allTextContents()).toContain('not-an-address: not an IPv4 or IPv6 address');
    await page.getByLabel('IP allowlist (optional)').fill('127.0.0.1/32, ::1');
    await page.getByLabel('Name').focus();
    await page.keyboard.press('Enter');

    rawKey = (await page.getByTestId('secret').textContent()) ?? '';
    expect(rawKey).toMatch(/^mt_live_[0-9a-f]{64}$/);
    expect(await page.getByRole('region', { name: 'New key "console key"' }).textContent()).toContain('shown only this once');
    await page.getByRole('button', { name: 'Copy' }).click();
    expect(await page.evaluate<string>('navigator.clipboard.readText()')).toBe(rawKey);
    await checkPage('keys');

    const call = await fetch(`${service.url}/api/employer/webhooks`, { headers: keyHeaders(rawKey) });
    expect(call.status).toBe(200);

    await page.reload();
    await page.getByRole('cell', { name: /^console key mt_live_/ }).waitFor();
    expect(await page.getByTestId('secret').count()).toBe(0);
    expect(await page.content()).not.toContain(rawKey);
  });

  it('revokes the key after confirmation, and the API refuses it', async () => {
    page.once('dialog', (dialog) => void dialog.accept());
    await page.getByRole('button', { name: 'Revoke console key' }).click();
    await page.getByText('Key "console key": revoked.').waitFor();
    expect(await page.locator('tr', { hasText: 'console key' }).locator('.status').textContent()).toBe('revoked');
    expect((await fetch(`${service.url}/api/employer/webhooks`, { headers: keyHeaders(rawKey) })).status).toBe(401);
  });

  it('shows an API error in words, not as JSON', async () => {
    await openPage('keys', 'API keys');
    await page.getByLabel('Name').fill('expired key');
    await page.locator('#scope-cohort-read').check();
    await page.getByLabel('Expires (optional)').fill('2020-01-01T10:00');
    await page.getByRole('button', { name: 'Create key' }).click();
    const message = page.locator('.notice.fail');
    await message.waitFor();
    expect(await message.textContent()).toMatch(/expiresAt/);
    expect(await message.textContent()).not.toMatch(/[{}]/);
  });

  it('creates a webhook to the HTTPS receiver, sends a test and shows the delivery and its attempt', async () => {
    await openPage('webhooks', 'Webhooks');
    const url = `${receiver.url}/console-hook`;
    await page.getByLabel('HTTPS URL').fill(url);
    await page.getByLabel('test.ping').check();
    await page.getByRole('button', { name: 'Subscribe' }).click();
    expect(await page.getByTestId('secret').textContent()).toMatch(/^whsec_/);

    await page.getByRole('button', { name: `Send test to ${url}` }).click();
    await page.getByText(/^Test delivered: 200 in \d+ ms\.$/).waitFor();
    expect(receiver.requests.some((request) => request.path === '/console-hook')).toBe(true);
    const delivery = page.getByTestId('delivery').first();
    expect(await delivery.textContent()).toContain('test.ping (test)');
    const attempt = delivery.getByRole('row').nth(1);
    expect(await attempt.getByRole('cell').allTextContents()).toEqual(['1', expect.any(String), '200', expect.stringMatching(/^\d+ ms$/), 'ok']);
    await checkPage('webhooks');
  });

  it('turns SCIM on and shows its token once', async () => {
    await openPage('sso', 'Single sign-on');
    await checkPage('sso');
    await page.getByRole('button', { name: 'Turn SCIM on' }).click();
    const token = (await page.getByTestId('secret').textContent()) ?? '';
    expect(token.length).toBeGreaterThan(20);
    await page.getByText('SCIM turned on.').waitFor();
    expect(await page.getByTestId('scim-state').textContent()).toMatch(/^SCIM is on/);
    const scim = await fetch(`${service.url}/api/scim/v2/Users`, { headers: { authorization: `Bearer ${token}` } });
    expect(scim.status).toBe(200);
    await page.reload();
    await page.getByTestId('scim-state').waitFor();
    expect(await page.getByTestId('secret').count()).toBe(0);
  });

  it('shows a SAML change an API key proposed, with its certificate fingerprint, and confirms it', async () => {
    const idp = await createTestIdp();
    const key = await createApiKey(service, { cookie: await service.signIn(employerId, adminUserId) }, { scopes: ['sso:manage'], name: 'sso automation' });
    const proposed = await fetch(`${service.url}/api/employer/sso`, {
      method: 'POST',
      headers: { ...keyHeaders(key.rawKey), 'content-type': 'application/json' },
      body: JSON.stringify({ samlEntryPoint: idp.entryPoint, samlIssuer: idp.issuer, samlCertificate: idp.certificatePem }),
    });
    expect(proposed.status).toBe(202);
    const { pendingTrustChange } = (await proposed.json()) as { pendingTrustChange: { changes: { samlCertificates: Array<{ fingerprintSha256: string }> } } };

    await openPage('sso', 'Single sign-on');
    await page.reload(); // the page was open already: read the configuration again
    const pending = page.getByRole('region', { name: 'Pending SAML change' });
    expect(await pending.textContent()).toContain(`API key ${key.id}`);
    expect(await pending.textContent()).toContain(pendingTrustChange.changes.samlCertificates[0]!.fingerprintSha256);
    await checkPage('sso-pending');
    page.once('dialog', (dialog) => void dialog.accept());
    await pending.getByRole('button', { name: 'Confirm change' }).click();
    await page.getByText('SAML change confirmed.').waitFor();
    expect(await page.getByRole('region', { name: 'Pending SAML change' }).count()).toBe(0);
    expect(await page.getByLabel('IdP issuer (entity id)').inputValue()).toBe(idp.issuer);
  });

  it('uploads a cohort CSV: a bad row is shown and nothing is sent, then a good file shows its counts; the roster searches', async () => {
    await openPage('patients', 'Patients');
    const file = page.getByLabel('CSV file');
    await file.setInputFiles({ name: 'bad.csv', mimeType: 'text/csv', buffer: Buffer.from('email,firstName,lastName\nann@example.test,Ann,Lee\nnot-an-email,Bob,\n') });
    await page.getByRole('button', { name: 'Upload' }).click();
    await page.getByText('Row 3, lastName: is empty').waitFor();
    expect(await page.locator('.notice.fail').textContent()).toMatch(/^Nothing was sent/);
    const patients = await fetch(`${service.url}/api/employer/patients`, { headers: { cookie: (await context.cookies()).map((c) => `${c.name}=${c.value}`).join('; ') } });
    expect(((await patients.json()) as { patients: unknown[] }).patients).toEqual([]);

    await file.setInputFiles({ name: 'good.csv', mimeType: 'text/csv', buffer: Buffer.from('email,firstName,lastName,birthDate\nann@example.test,Ann,Lee,1980-02-03\n"bob@example.test","Bob","O\'Neil",\n') });
    await page.getByRole('button', { name: 'Upload' }).click();
    await page.getByText('Cohort uploaded: 2 received, 2 created, 0 updated, 0 unchanged.').waitFor();
    await page.getByRole('cell', { name: 'ann@example.test' }).waitFor();
    // The roster's search: the start of a last name.
    await page.getByRole('searchbox', { name: 'Search patients' }).fill("o'ne");
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await page.getByRole('cell', { name: 'ann@example.test' }).waitFor({ state: 'detached' });
    expect(await page.getByRole('table', { name: 'Patients' }).getByRole('cell', { name: 'bob@example.test' }).count()).toBe(1);
    await checkPage('patients');
  });

  it('starts a CSV export and downloads it', async () => {
    await openPage('exports', 'Exports');
    await page.getByRole('button', { name: 'Start a CSV export' }).click();
    const link = page.getByRole('link', { name: 'Download the CSV export' });
    await link.waitFor();
    const [download] = await Promise.all([page.waitForEvent('download'), link.click()]);
    const path = await download.path();
    const { readFile } = await import('node:fs/promises');
    expect(await readFile(path, 'utf8')).toContain('ann@example.test');
    await checkPage('exports');
  });

  it('finds these actions in the audit log', async () => {
    await openPage('audit', 'Audit log');
    const filters = page.getByRole('form', { name: 'Filter the audit log' });
    await filters.getByLabel('Action').fill('api_key.revoked');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.getByRole('cell', { name: 'api_key.revoked' }).waitFor();
    await filters.getByLabel('Action').fill('');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    for (const action of ['api_key.created', 'sso.config.update']) await page.getByRole('cell', { name: action }).first().waitFor();
    await checkPage('audit');
  });

  it('met the Content-Security-Policy on every page (no violation reported)', () => {
    expect(cspViolations).toEqual([]);
  });

  it('signs out', async () => {
    await openPage('keys', 'API keys');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { level: 1, name: 'Sign in' }).waitFor();
    expect((await fetch(`${service.url}/api/auth/session`, { headers: { cookie: (await context.cookies()).map((c) => `${c.name}=${c.value}`).join('; ') } })).status).toBe(401);
  });
});
