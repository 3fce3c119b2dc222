// Issue 24: the IdP rolls its signing certificate and nobody saves the SSO configuration. Real IdP key
// pairs sign real responses; the IdP's metadata is served over HTTPS on loopback (allowed by
// WEBHOOK_ALLOW_PRIVATE_NETWORKS, as in development); the daily jobs are run with the time they are
// given (no waiting), and the expiry warning is read back from a real SMTP server.
import { generate } from 'selfsigned';
import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { capabilities } from '../../src/capabilities.ts';
import { createSsoCapability } from '../../src/sso/capability.ts';
import { metadataFetchOptionsOf } from '../../src/sso/idp-metadata.ts';
import { refreshEveryIdpMetadata, warnOfExpiringCertificates } from '../../src/sso/tasks.ts';
import { startHttpsReceiver, type HttpsReceiver } from '../support/https-receiver.ts';
import { startMailCatcher, type MailCatcher } from '../support/mail-catcher.ts';
import { createTestIdp, type TestIdp } from '../support/saml-idp.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { waitUntil } from '../webhooks/helpers.ts';
import { getSso, postCallback, postSso, spUrls, startLogin, type JsonBody, type Tenant } from './sso-test-kit.ts';

const DAY = 86_400_000;
let service: TestService;
let smtp: MailCatcher;
let metadataServer: HttpsReceiver;
/** What the IdP's metadata URL serves now: the certificates it lists. */
let published: TestIdp[] = [];
let outgoing: TestIdp;
let incoming: TestIdp;

const base64Of = (pem: string) => pem.replace(/-----(BEGIN|END) CERTIFICATE-----|\s/g, '');
const metadataXml = (idps: TestIdp[]) =>
  `<EntityDescriptor xmlns="urn:oasis:names:tc:SAML:2.0:metadata" entityID="${idps[0]!.issuer}"><IDPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">` +
  idps.map((idp) => `<KeyDescriptor use="signing"><KeyInfo xmlns="http://www.w3.org/2000/09/xmldsig#"><X509Data><X509Certificate>${base64Of(idp.certificatePem)}</X509Certificate></X509Data></KeyInfo></KeyDescriptor>`).join('') +
  `<SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="${idps[0]!.entryPoint}"/></IDPSSODescriptor></EntityDescriptor>`;

beforeAll(async () => {
  smtp = await startMailCatcher();
  metadataServer = await startHttpsReceiver();
  metadataServer.respondWith(() => (published.length > 0 ? { status: 200, body: metadataXml(published) } : { status: 503, body: 'down' }));
  const sso = createSsoCapability({ idpMetadataCa: metadataServer.ca });
  service = await startTestService({
    env: { SMTP_URL: smtp.smtpUrl, WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' },
    capabilities: capabilities.map((capability) => (capability.name === 'sso' ? sso : capability)),
  });
  const issuer = 'https://idp.example.test/rolling';
  [outgoing, incoming] = await Promise.all([createTestIdp({ issuer }), createTestIdp({ issuer })]);
});
afterAll(async () => {
  await service?.stop();
  await metadataServer?.close();
  await smtp?.close();
});

const refreshAt = (now: Date) => refreshEveryIdpMetadata(service.ctx, metadataFetchOptionsOf(service.ctx.config, metadataServer.ca), now);

/** A login the browser starts at the service, answered by `signer`. */
async function loginWith(tenant: Tenant, signer: TestIdp) {
  const { requestId } = await startLogin(service, tenant.employerId);
  return postCallback(service, tenant.employerId, await signer.createLoginResponse({ requestId: requestId!, ...spUrls(service, tenant.employerId), email: `someone.${Date.now()}@employer.example` }));
}

const auditRow = z.object({ action: z.string(), actor_type: z.string(), details: z.record(z.string(), z.unknown()) });
const auditOf = (employerId: string, action: string) =>
  service.ctx.db.slonik.any(sql.type(auditRow)`SELECT action, actor_type, details FROM audit_log WHERE employer_id = ${employerId} AND action = ${action} ORDER BY global_position`);
const mailsTo = (email: string) => smtp.mails.filter((mail) => [mail.to].flat().some((address) => address?.text === email));

let counter = 0;
async function adminTenant(): Promise<Tenant & { adminEmail: string }> {
  counter += 1;
  const adminEmail = `admin.${counter}.${Date.now()}@employer.example`;
  return { ...(await service.createTenant({ adminEmail })), adminEmail };
}

describe('IdP metadata refresh', () => {
  it('picks up a rolled certificate without anyone saving the configuration, and retires the old one after its grace period', async () => {
    published = [outgoing];
    const tenant = await adminTenant();
    const saved = await postSso(service, tenant, { samlEnabled: true, samlMetadataUrl: `${metadataServer.url}/metadata`, samlEmailAttribute: 'email' });
    expect(saved.status).toBe(200);
    expect((await loginWith(tenant, incoming)).body).toMatchObject({ reason: 'SIGNATURE_INVALID' });

    // The IdP publishes its next certificate beside the current one, then signs with it.
    published = [outgoing, incoming];
    const now = new Date();
    await refreshAt(now);
    expect((await loginWith(tenant, incoming)).status).toBe(302);
    expect((await loginWith(tenant, outgoing)).status).toBe(302);

    // It drops the old one from its metadata: still trusted for the grace period, then not.
    published = [incoming];
    await refreshAt(now);
    const during = await getSso(service, tenant);
    expect(during.body.samlMetadataRefresh).toMatchObject({ failure: null, retiringCertificates: [{ trustedUntil: new Date(now.getTime() + DAY).toISOString() }] });
    expect((await loginWith(tenant, outgoing)).status).toBe(302);
    await refreshAt(new Date(now.getTime() + DAY + 1));
    expect((await loginWith(tenant, outgoing)).body).toMatchObject({ reason: 'SIGNATURE_INVALID' });
    expect((await loginWith(tenant, incoming)).status).toBe(302);

    const audit = await auditOf(tenant.employerId, 'sso.metadata.refresh');
    expect(audit.map((row) => [row.actor_type, (row.details.addedCertificates as string[]).length, (row.details.retiringCertificates as unknown[]).length, (row.details.removedCertificates as string[]).length])).toEqual([
      ['system', 1, 0, 0],
      ['system', 0, 1, 0],
      ['system', 0, 0, 1],
    ]);
    const mails = await waitUntil('three certificate mails', () => mailsTo(tenant.adminEmail).filter((mail) => mail.subject?.includes('updated from')).length >= 3 && mailsTo(tenant.adminEmail));
    expect(mails.find((mail) => mail.subject?.includes('updated from'))?.text).toContain('Trusted from now');
  });

  it('keeps the last good metadata when a refresh fails, reports it, and clears the report when one succeeds', async () => {
    published = [incoming];
    const tenant = await adminTenant();
    await postSso(service, tenant, { samlEnabled: true, samlMetadataUrl: `${metadataServer.url}/metadata`, samlEmailAttribute: 'email' });

    published = [];
    const refresh = () => fetch(`${service.url}/api/employer/sso/metadata/refresh`, { method: 'POST', headers: service.sessionHeaders(tenant.cookie) });
    const failed = await refresh();
    expect(failed.status).toBe(200);
    const failure = ((await failed.json()) as { samlMetadataRefresh: { failure: JsonBody | null } }).samlMetadataRefresh.failure;
    expect(failure).toMatchObject({ code: 'SAML_METADATA_UNREACHABLE', message: expect.stringContaining('HTTP 503') });
    expect((await loginWith(tenant, incoming)).status).toBe(302);
    expect(await auditOf(tenant.employerId, 'sso.metadata.refresh_failed')).toMatchObject([{ actor_type: 'user', details: { code: 'SAML_METADATA_UNREACHABLE' } }]);

    published = [incoming];
    const recovered = (await (await refresh()).json()) as { samlMetadataRefresh: { failure: unknown; refreshedAt: string | null } };
    expect(recovered.samlMetadataRefresh.failure).toBeNull();
    expect(recovered.samlMetadataRefresh.refreshedAt).not.toBeNull();
  });

  it('refuses metadata naming another IdP, and refreshing without a metadata URL', async () => {
    published = [incoming];
    const tenant = await adminTenant();
    await postSso(service, tenant, { samlEnabled: true, samlMetadataUrl: `${metadataServer.url}/metadata`, samlEmailAttribute: 'email' });
    published = [await createTestIdp({ issuer: 'https://idp.attacker.example' })];
    await refreshAt(new Date());
    expect((await getSso(service, tenant)).body.samlMetadataRefresh).toMatchObject({ failure: { code: 'SAML_METADATA_ISSUER_CHANGED' } });
    expect((await loginWith(tenant, published[0]!)).body).toMatchObject({ reason: 'SIGNATURE_INVALID' });

    const other = await adminTenant();
    const response = await fetch(`${service.url}/api/employer/sso/metadata/refresh`, { method: 'POST', headers: service.sessionHeaders(other.cookie) });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ code: 'SAML_METADATA_URL_NOT_SET' });
  });
});

describe('IdP certificate expiry warnings', () => {
  it('e-mails the administrators and audits once per threshold; the SSO GET shows the expiry', async () => {
    const tenant = await adminTenant();
    const now = Date.now();
    const { cert } = await generate([{ name: 'commonName', value: 'expiring-idp' }], { keySize: 2048, algorithm: 'sha256', notBeforeDate: new Date(now - DAY), notAfterDate: new Date(now + 20 * DAY) });
    await postSso(service, tenant, { samlEnabled: true, samlEntryPoint: incoming.entryPoint, samlCertificate: cert, samlIssuer: incoming.issuer });

    await warnOfExpiringCertificates(service.ctx, new Date(now));
    await warnOfExpiringCertificates(service.ctx, new Date(now + DAY));
    const mail = await waitUntil('the 30-day warning', () => mailsTo(tenant.adminEmail).find((received) => received.subject?.includes('IdP certificate expiring')));
    expect(mail.subject).toBe('SAML sign-in stops in 30 days: IdP certificate expiring');
    expect(mail.text).toContain('CN=expiring-idp');
    const sso = await getSso(service, tenant);
    expect(sso.body.samlCertificateExpiry).toMatchObject({ subject: 'CN=expiring-idp', warningDays: 30, validTo: (sso.body.samlCertificates as Array<{ validTo: string }>)[0]!.validTo });

    await warnOfExpiringCertificates(service.ctx, new Date(now + 14 * DAY));
    await waitUntil('the 7-day warning', () => mailsTo(tenant.adminEmail).find((received) => received.subject === 'SAML sign-in stops in 7 days: IdP certificate expiring'));
    const audit = await auditOf(tenant.employerId, 'sso.certificate.expiry_warning');
    expect(audit.map((row) => [row.actor_type, row.details.daysBefore])).toEqual([
      ['system', 30],
      ['system', 7],
    ]);
  });
});
