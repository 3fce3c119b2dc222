// The scheduled operational endpoints on the real service, with a real SMTP server in this process
// (smtp-server) whose messages are parsed with mailparser: the alert reaches the right employer's
// admins once, a second run in the same hour (month) records and sends nothing, and the endpoints
// refuse callers without the cron secret.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey, keyHeaders } from '../support/api-keys.ts';
import { startMailCatcher, type MailCatcher } from '../support/mail-catcher.ts';
import { startTestService, type TestService } from '../support/service.ts';

const CRON_SECRET = 'cron-secret-for-tests-0123456789';
const WAIT_MS = 20_000;

/** Resolves once `condition()` holds, checking every 25 ms, failing after WAIT_MS. */
async function until(condition: () => boolean | Promise<boolean>, what: string) {
  const deadline = Date.now() + WAIT_MS;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

describe('cron endpoints and alert e-mails', () => {
  let smtp: MailCatcher;
  let mails: MailCatcher['mails'];
  let service: TestService;
  let acme: { employerId: string; adminUserId: string; cookie: string };
  let globex: { employerId: string; adminUserId: string; cookie: string };
  const acmeAdmin = `admin-${Date.now()}@acme.test`;
  const globexAdmin = `admin-${Date.now()}@globex.test`;

  const cron = (path: string, secret: string | null = CRON_SECRET) =>
    fetch(`${service.url}/api/cron/${path}`, { headers: secret === null ? {} : { authorization: `Bearer ${secret}` } });
  /** Jobs of the mail task not yet done (queued, running or waiting to retry). */
  const pendingMailJobs = async () =>
    Number((await service.ctx.db.pg.query(`SELECT count(*) FROM graphile_worker.jobs WHERE task_identifier = 'operations-mail'`)).rows[0].count);
  const auditActions = async (tenant: { cookie: string }, action: string) => {
    const response = await fetch(`${service.url}/api/employer/audit-events?action=${action}`, { headers: service.sessionHeaders(tenant.cookie) });
    return ((await response.json()) as { entries: Array<{ action: string; details: Record<string, unknown>; actor: { type: string } }> }).entries;
  };

  beforeAll(async () => {
    smtp = await startMailCatcher();
    mails = smtp.mails;
    service = await startTestService({
      env: {
        CRON_SECRET,
        SMTP_URL: smtp.smtpUrl,
        INTEGRATION_ALERT_IP_REJECTIONS_THRESHOLD: '10',
        API_KEY_INVENTORY_EXPECTED_MIN: '1',
        API_KEY_INVENTORY_EXPECTED_MAX: '5',
      },
    });
    acme = await service.createTenant({ adminEmail: acmeAdmin });
    globex = await service.createTenant({ adminEmail: globexAdmin });
  }, 60_000);

  afterAll(async () => {
    await service?.stop();
    await smtp?.close();
  });

  it('refuses callers without the secret (401), and is off without CRON_SECRET (503)', async () => {
    for (const path of ['integration-alerts', 'api-key-inventory-review']) {
      const missing = await cron(path, null);
      expect(missing.status).toBe(401);
      expect(await missing.json()).toMatchObject({ code: 'UNAUTHORIZED', requestId: expect.any(String) });
      expect((await cron(path, `${CRON_SECRET}x`)).status).toBe(401);
    }
    const unconfigured = await startTestService({ roles: ['api'] });
    try {
      const response = await fetch(`${unconfigured.url}/api/cron/integration-alerts`, { headers: { authorization: `Bearer ${CRON_SECRET}` } });
      expect(response.status).toBe(503);
      expect(await response.json()).toMatchObject({ code: 'CRON_NOT_CONFIGURED', message: expect.stringMatching(/CRON_SECRET/) });
    } finally {
      await unconfigured.stop();
    }
  }, 60_000);

  it('alerts on repeated allowlist rejections once per hour, by e-mail to that employer\'s admins only', async () => {
    const acmeKey = await createApiKey(service, acme, { scopes: ['webhook:manage'], name: 'payroll sync', allowedIpCidrs: ['10.0.0.0/8'] });
    const globexKey = await createApiKey(service, globex, { scopes: ['webhook:manage'], allowedIpCidrs: ['10.0.0.0/8'] });
    const call = async (rawKey: string) => {
      const response = await fetch(`${service.url}/api/employer/webhooks`, { headers: keyHeaders(rawKey) });
      expect(response.status).toBe(403);
      expect(((await response.json()) as { code: string }).code).toBe('API_KEY_IP_NOT_ALLOWED');
    };
    for (let i = 0; i < 12; i += 1) await call(acmeKey.rawKey);
    for (let i = 0; i < 3; i += 1) await call(globexKey.rawKey);

    const first = await cron('integration-alerts');
    expect(first.status).toBe(200);
    const summary = (await first.json()) as { threshold: number; employersWithRejections: number; alerts: unknown[] };
    expect(summary).toMatchObject({ threshold: 10, employersWithRejections: 2, alerts: [{ employerId: acme.employerId, rejections: 12, recorded: true }] });

    await until(() => mails.length === 1, 'the alert e-mail');
    const [mail] = mails;
    expect(mail!.to).toMatchObject({ value: [{ address: acmeAdmin }] });
    expect(mail!.subject).toContain('12');
    expect(mail!.text).toContain('12 from 127.0.0.1 with key payroll sync');
    expect(mail!.text).not.toContain(acmeKey.rawKey);

    const second = await cron('integration-alerts');
    expect(await second.json()).toMatchObject({ alerts: [{ employerId: acme.employerId, rejections: 12, recorded: false }] });
    // Nothing recorded, so nothing queued: once the mail jobs are done, still the one e-mail.
    await until(async () => (await pendingMailJobs()) === 0, 'the mail queue to drain');
    expect(mails).toHaveLength(1);

    const entries = await auditActions(acme, 'integration.alert.ip_rejections');
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({ actor: { type: 'system' }, details: { rejections: 12, sources: [{ keyId: acmeKey.id, ip: '127.0.0.1', rejections: 12 }] } });
    expect(await auditActions(globex, 'integration.alert.')).toEqual([]);
  }, 60_000);

  it('reviews the key inventory once a month, e-mailing admins only where something is flagged', async () => {
    const mailsBefore = mails.length;
    const expiring = await createApiKey(service, acme, { scopes: ['cohort:read'], name: 'expiring soon', expiresAt: new Date(Date.now() + 3 * 86_400_000).toISOString() });
    const stale = await createApiKey(service, acme, { scopes: ['cohort:read'], name: 'forgotten' });
    // Telemetry as the pipeline writes it, dated back: the key was last used 120 days ago.
    await service.ctx.db.pg.query(
      `INSERT INTO api_key_usage (key_id, employer_id, request_count, last_used_at, last_used_ip) VALUES ($1, $2, 1, now() - interval '120 days', '10.1.2.3')`,
      [stale.id, acme.employerId],
    );
    const third = await service.createTenant();

    const response = await cron('api-key-inventory-review');
    expect(response.status).toBe(200);
    const summary = (await response.json()) as { month: string; reviews: Array<{ employerId: string }> };
    expect(summary.month).toBe(new Date().toISOString().slice(0, 7));
    const review = (employerId: string) => summary.reviews.find((candidate) => candidate.employerId === employerId);
    expect(review(acme.employerId)).toMatchObject({ activeKeys: 3, countOutOfBounds: null, staleKeys: 1, expiringKeys: 1, flagged: true, recorded: true });
    expect(review(globex.employerId)).toMatchObject({ activeKeys: 1, flagged: false, recorded: true });
    expect(review(third.employerId)).toMatchObject({ activeKeys: 0, countOutOfBounds: 'below', flagged: true, recorded: true });

    await until(() => mails.length === mailsBefore + 2, 'the review e-mails');
    const reviewMails = mails.slice(mailsBefore);
    const acmeMail = reviewMails.find((mail) => JSON.stringify(mail.to).includes(acmeAdmin))!;
    expect(acmeMail.subject).toMatch(/inventory review .* action needed/);
    expect(acmeMail.text).toContain('forgotten');
    expect(acmeMail.text).toContain('expiring soon');
    expect(reviewMails.some((mail) => JSON.stringify(mail.to).includes(globexAdmin))).toBe(false);

    const again = (await (await cron('api-key-inventory-review')).json()) as { reviews: Array<{ recorded: boolean }> };
    expect(again.reviews.every((candidate) => candidate.recorded === false)).toBe(true);
    await until(async () => (await pendingMailJobs()) === 0, 'the mail queue to drain');
    expect(mails).toHaveLength(mailsBefore + 2);

    const entries = await auditActions(acme, 'api_key.inventory_review');
    expect(entries).toHaveLength(1);
    expect(entries[0]!.details).toMatchObject({ flagged: true, staleKeys: [{ keyId: stale.id }], expiringKeys: [{ keyId: expiring.id }] });
  }, 60_000);
});
