// How alert e-mails leave: a mail server that refuses the first attempt gets the message on the
// worker's retry while the audit record stood from the start; with no SMTP_URL the message is an
// .eml file in DATA_DIR/outbox and a log line says so.
import { once } from 'node:events';
import { readdir, readFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { simpleParser, type ParsedMail } from 'mailparser';
import { SMTPServer } from 'smtp-server';
import { afterEach, describe, expect, it } from 'vitest';
import { createApiKey, keyHeaders } from '../support/api-keys.ts';
import { startTestService, type TestService } from '../support/service.ts';

const CRON_SECRET = 'cron-secret-for-tests-0123456789';
// graphile-worker's first retry comes after about e^1 s.
const WAIT_MS = 30_000;

async function until(condition: () => boolean | Promise<boolean>, what: string) {
  const deadline = Date.now() + WAIT_MS;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** One rejected call, then the alerts job (threshold 1): an alert for the tenant. */
async function raiseAlert(service: TestService) {
  const tenant = await service.createTenant();
  const key = await createApiKey(service, tenant, { scopes: ['webhook:manage'], allowedIpCidrs: ['10.0.0.0/8'] });
  expect((await fetch(`${service.url}/api/employer/webhooks`, { headers: keyHeaders(key.rawKey) })).status).toBe(403);
  const response = await fetch(`${service.url}/api/cron/integration-alerts`, { headers: { authorization: `Bearer ${CRON_SECRET}` } });
  expect(await response.json()).toMatchObject({ alerts: [{ employerId: tenant.employerId, recorded: true }] });
  return tenant;
}

const auditEntries = async (service: TestService, tenant: { cookie: string }) => {
  const response = await fetch(`${service.url}/api/employer/audit-events?action=integration.alert.ip_rejections`, { headers: service.sessionHeaders(tenant.cookie) });
  return ((await response.json()) as { entries: unknown[] }).entries;
};

describe('alert e-mail delivery', () => {
  const cleanups: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  it('a refused send is retried by the worker; the audit record does not wait for it', async () => {
    const mails: ParsedMail[] = [];
    let attempts = 0;
    const smtp = new SMTPServer({
      authOptional: true,
      disabledCommands: ['STARTTLS', 'AUTH'],
      logger: false,
      onData(stream, _session, callback) {
        attempts += 1;
        if (attempts === 1) {
          stream.resume();
          stream.on('end', () => callback(Object.assign(new Error('mailbox busy, try later'), { responseCode: 451 })));
          return;
        }
        simpleParser(stream).then((mail) => {
          mails.push(mail);
          callback();
        }, callback);
      },
    });
    smtp.listen(0, '127.0.0.1');
    await once(smtp.server, 'listening');
    cleanups.push(() => smtp.close());
    const service = await startTestService({
      env: { CRON_SECRET, SMTP_URL: `smtp://127.0.0.1:${(smtp.server.address() as AddressInfo).port}`, INTEGRATION_ALERT_IP_REJECTIONS_THRESHOLD: '1' },
    });
    cleanups.push(() => service.stop());

    const tenant = await raiseAlert(service);
    expect(await auditEntries(service, tenant)).toHaveLength(1);
    await until(() => attempts >= 1, 'the first, refused, attempt');
    expect(mails).toHaveLength(0);
    await until(() => mails.length === 1, 'the retried e-mail');
    expect(attempts).toBe(2);
    expect(mails[0]!.subject).toMatch(/API key calls refused: 1 /);
  }, 60_000);

  it('without SMTP_URL, writes the message to DATA_DIR/outbox and logs where', async () => {
    const logLines: string[] = [];
    const service = await startTestService({ env: { CRON_SECRET, INTEGRATION_ALERT_IP_REJECTIONS_THRESHOLD: '1' }, logDestination: { write: (line: string) => void logLines.push(line) } });
    cleanups.push(() => service.stop());
    const outbox = join(service.ctx.config.DATA_DIR, 'outbox');
    const files = async () => (await readdir(outbox).catch(() => [] as string[])).filter((file) => file.endsWith('.eml'));

    await raiseAlert(service);
    await until(async () => (await files()).length === 1, 'the .eml file');
    const mail = await simpleParser(await readFile(join(outbox, (await files())[0]!)));
    expect(mail.subject).toMatch(/API key calls refused: 1 /);
    expect(mail.text).toContain('127.0.0.1');
    expect(logLines.some((line) => line.includes('SMTP_URL is not set: e-mail written to the outbox') && line.includes(outbox))).toBe(true);
  }, 60_000);
});
