// The console's SAML certificates section in a real Chromium, against the whole service and an IdP
// metadata server on loopback: the expiry banner, refreshing the metadata (a rolled certificate picked
// up, a failure shown), downloading the SP metadata, and rotating the SP key.
import { readFile } from 'node:fs/promises';
import type { Browser, Page } from 'playwright-core';
import { generate } from 'selfsigned';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { capabilities } from '../../src/capabilities.ts';
import { createSsoCapability } from '../../src/sso/capability.ts';
import { browserUnavailable, launchChromium, seriousAxeViolations, signedInPage } from '../support/browser.ts';
import { startHttpsReceiver, type HttpsReceiver } from '../support/https-receiver.ts';
import { startTestService, type TestService } from '../support/service.ts';

const unavailable = browserUnavailable();
if (unavailable) console.warn(`console end-to-end tests skipped: ${unavailable}`);

const DAY = 86_400_000;
const ISSUER = 'https://idp.example.test/console';
const base64Of = (pem: string) => pem.replace(/-----(BEGIN|END) CERTIFICATE-----|\s/g, '');
const metadataXml = (certificates: string[]) =>
  `<EntityDescriptor xmlns="urn:oasis:names:tc:SAML:2.0:metadata" entityID="${ISSUER}"><IDPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">` +
  certificates.map((pem) => `<KeyDescriptor use="signing"><KeyInfo xmlns="http://www.w3.org/2000/09/xmldsig#"><X509Data><X509Certificate>${base64Of(pem)}</X509Certificate></X509Data></KeyInfo></KeyDescriptor>`).join('') +
  `<SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="${ISSUER}/sso"/></IDPSSODescriptor></EntityDescriptor>`;

describe.skipIf(unavailable !== null)('the SAML certificates section of the console', () => {
  let metadataServer: HttpsReceiver;
  let service: TestService;
  let browser: Browser;
  let page: Page;
  let expiring: string;
  let next: string;
  let published: string[] = [];

  beforeAll(async () => {
    const certificate = async (name: string, days: number) =>
      (await generate([{ name: 'commonName', value: name }], { keySize: 2048, algorithm: 'sha256', notBeforeDate: new Date(Date.now() - DAY), notAfterDate: new Date(Date.now() + days * DAY) })).cert;
    [expiring, next] = await Promise.all([certificate('idp-expiring', 20), certificate('idp-next', 400)]);
    metadataServer = await startHttpsReceiver();
    metadataServer.respondWith(() => (published.length > 0 ? { status: 200, body: metadataXml(published) } : { status: 503, body: 'down' }));
    const sso = createSsoCapability({ idpMetadataCa: metadataServer.ca });
    service = await startTestService({ env: { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' }, capabilities: capabilities.map((capability) => (capability.name === 'sso' ? sso : capability)) });
    const { cookie } = await service.createTenant();
    published = [expiring];
    const saved = await fetch(`${service.url}/api/employer/sso`, {
      method: 'POST',
      headers: { ...service.sessionHeaders(cookie), 'content-type': 'application/json' },
      body: JSON.stringify({ samlEnabled: true, samlMetadataUrl: `${metadataServer.url}/metadata` }),
    });
    expect(saved.status).toBe(200);
    browser = await launchChromium();
    page = await signedInPage(browser, service.url, cookie, { acceptDownloads: true });
  });
  afterAll(async () => {
    await browser?.close();
    await service?.stop();
    await metadataServer?.close();
  });

  it('warns before the IdP certificate expires; a refresh picks up the rolled certificate and the warning goes; a failed refresh is shown', async () => {
    await page.goto(`${service.url}/#/sso`);
    const section = page.getByRole('region', { name: 'SAML certificates' });
    const banner = section.getByTestId('certificate-expiry');
    await banner.waitFor();
    expect(await banner.textContent()).toContain('CN=idp-expiring');
    expect(await seriousAxeViolations(page)).toEqual([]);

    published = [expiring, next];
    await section.getByRole('button', { name: 'Refresh IdP metadata' }).click();
    await page.getByText('IdP metadata read again.').waitFor();
    await page.getByRole('region', { name: 'SAML certificates' }).getByRole('cell', { name: /CN=idp-next/ }).waitFor();
    expect(await page.getByTestId('certificate-expiry').count()).toBe(0);

    published = [];
    await page.getByRole('region', { name: 'SAML certificates' }).getByRole('button', { name: 'Refresh IdP metadata' }).click();
    const failure = page.getByTestId('metadata-failure');
    await failure.waitFor();
    expect(await failure.textContent()).toContain('HTTP 503');
    expect(await seriousAxeViolations(page)).toEqual([]);
  });

  it('downloads the SP metadata with the SP certificate for signing and encryption, and rotates the SP key with an overlap', async () => {
    await page.goto(`${service.url}/#/sso`);
    const downloading = page.waitForEvent('download');
    await page.getByRole('link', { name: 'Download SP metadata' }).click();
    const metadata = await readFile((await (await downloading).path())!, 'utf8');
    expect(metadata).toContain('<KeyDescriptor use="signing">');
    expect(metadata).toContain('<KeyDescriptor use="encryption">');

    const section = page.getByRole('region', { name: 'SAML certificates' });
    expect(await section.getByTestId('sp-key').count()).toBe(1);
    await section.getByLabel('Overlap (hours)').fill('24');
    page.once('dialog', (dialog) => void dialog.accept());
    await section.getByRole('button', { name: 'Rotate SP key' }).click();
    await page.getByText('SP key rotated: download the SP metadata again for your IdP.').waitFor();
    const keys = page.getByRole('region', { name: 'SAML certificates' }).getByTestId('sp-key');
    expect(await keys.count()).toBe(2);
    expect(await keys.first().textContent()).toMatch(/signs requests.*in use until/);
  });
});
