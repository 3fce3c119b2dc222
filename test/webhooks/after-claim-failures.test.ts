// Once an attempt is claimed, nothing that goes wrong leaves its delivery pending with no job: a
// request that cannot be prepared is a failed attempt (logged, retried on the schedule), and a
// failure while recording the outcome gives the claim back for the job's retry.
import { randomBytes } from 'node:crypto';
import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encryptSecret, parseEncryptionKey } from '../../src/crypto/secret-box.ts';
import { requeueAbandonedAttempts } from '../../src/webhooks/deliveries.ts';
import type { HttpsReceiver } from '../support/https-receiver.ts';
import type { TestService } from '../support/service.ts';
import { startServiceWithReceiver } from '../support/service-with-receiver.ts';
import { apiClient, subscribe, waitUntil } from './helpers.ts';

let receiver: HttpsReceiver;
let service: TestService;
let stop: () => Promise<void>;

beforeAll(async () => ({ service, receiver, stop } = await startServiceWithReceiver()));
afterAll(() => stop?.());

const requestsTo = (path: string) => receiver.requests.filter((request) => request.path === path);

async function pingedSubscription(path: string) {
  const api = apiClient(service, await service.createTenant());
  const { id } = await subscribe(api, `${receiver.url}${path}`);
  const deliveries = async () => (await api.get(`/api/employer/webhooks/${id}/deliveries`)).body.deliveries as any[];
  return { api, id, deliveries, ping: () => api.post(`/api/employer/webhooks/${id}/ping`) };
}

describe('failures after an attempt is claimed', () => {
  it('a signing secret that does not open fails each attempt, logged and retried, until the delivery fails', async () => {
    const { id, deliveries, ping } = await pingedSubscription('/sealed-elsewhere');
    // As if sealed by a process with another ENCRYPTION_KEY.
    const otherKey = parseEncryptionKey(randomBytes(32).toString('hex'));
    await service.ctx.db.slonik.query(sql.unsafe`UPDATE webhook_subscriptions SET sealed_secret = ${encryptSecret('whsec_x', otherKey, id)} WHERE id = ${id}`);
    expect((await ping()).status).toBe(202);

    const [delivery] = await waitUntil('the delivery to fail', async () => {
      const page = await deliveries();
      return page[0]?.status === 'failed' && page;
    });
    expect(delivery).toMatchObject({ attemptCount: 6, nextAttemptAt: null });
    expect(delivery.attempts).toHaveLength(6);
    for (const attempt of delivery.attempts) expect(attempt).toMatchObject({ statusCode: null, error: expect.stringMatching(/^not sent: the signing secret could not be opened/) });
    expect(delivery.attempts[0].nextRetryAt).toEqual(expect.any(String));
    expect(requestsTo('/sealed-elsewhere')).toHaveLength(0);
  });

  it('a failure while recording the outcome releases the claim, and the job runs the attempt again', async () => {
    // The database refuses the first attempt log entry once (a sequence, which a rollback does not undo).
    await service.ctx.db.pg.query(`
      CREATE SEQUENCE fail_first_attempt_log;
      CREATE FUNCTION fail_first_attempt_log() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF nextval('fail_first_attempt_log') = 1 THEN RAISE EXCEPTION 'injected: attempt log unavailable'; END IF;
        RETURN NEW;
      END $$;
      CREATE TRIGGER fail_first_attempt_log BEFORE INSERT ON webhook_delivery_attempts FOR EACH ROW EXECUTE FUNCTION fail_first_attempt_log();`);
    try {
      const { deliveries, ping } = await pingedSubscription('/recorded-late');
      expect((await ping()).status).toBe(202);
      const [delivery] = await waitUntil('the delivery to succeed', async () => {
        const page = await deliveries();
        return page[0]?.status === 'succeeded' && page;
      });
      // Sent twice (at least once is the promise), with the same delivery id; logged once.
      const requests = requestsTo('/recorded-late');
      expect(requests).toHaveLength(2);
      expect(new Set(requests.map((request) => request.headers['x-webhook-id'])).size).toBe(1);
      expect(delivery).toMatchObject({ attemptCount: 1, attempts: [{ attempt: 1, statusCode: 200 }] });
    } finally {
      await service.ctx.db.pg.query('DROP TRIGGER fail_first_attempt_log ON webhook_delivery_attempts');
    }
  });

  it('logs a response body holding NUL characters (which Postgres text refuses) instead of failing to record it', async () => {
    receiver.respondWith((request) => (request.path === '/nul' ? { status: 200, body: 'ok\u0000then more' } : { status: 200, body: 'ok' }));
    try {
      const { deliveries, ping } = await pingedSubscription('/nul');
      expect((await ping()).status).toBe(202);
      const [delivery] = await waitUntil('the delivery to succeed', async () => {
        const page = await deliveries();
        return page[0]?.status === 'succeeded' && page;
      });
      expect(delivery.attempts).toEqual([expect.objectContaining({ statusCode: 200, responseBody: 'ok\uFFFDthen more' })]);
      expect(requestsTo('/nul')).toHaveLength(1);
    } finally {
      receiver.respondWith(() => ({ status: 200, body: 'ok' }));
    }
  });

  it('requeues a claim a live process has held far longer than any attempt takes', async () => {
    let answerFirst: () => void = () => {};
    receiver.respondWith((request) => {
      if (request.path !== '/held' || requestsTo('/held').length > 1) return { status: 200, body: 'ok' };
      return new Promise((resolve) => (answerFirst = () => resolve({ status: 200, body: 'late' })));
    });
    try {
      const { deliveries, ping } = await pingedSubscription('/held');
      expect((await ping()).status).toBe(202);
      await waitUntil('the first request to arrive', () => requestsTo('/held').length === 1);
      // As if the process had been stuck on this attempt for 11 minutes (its release failed, say).
      await service.ctx.db.slonik.query(sql.unsafe`
        UPDATE webhook_deliveries SET attempt_started_at = now() - interval '11 minutes'
        WHERE delivery_id = ${requestsTo('/held')[0]!.headers['x-webhook-id'] as string} AND attempt_lease IS NOT NULL`);
      expect(await requeueAbandonedAttempts(service.ctx.db.slonik, 10 * 60_000)).toBe(1);

      const [delivery] = await waitUntil('the requeued attempt to succeed', async () => {
        const page = await deliveries();
        return page[0]?.status === 'succeeded' && page;
      });
      expect(delivery).toMatchObject({ attemptCount: 1, attempts: [{ attempt: 1, statusCode: 200, responseBody: 'ok' }] });
      expect(new Set(requestsTo('/held').map((request) => request.headers['x-webhook-id']))).toEqual(new Set([delivery.id]));
    } finally {
      answerFirst();
      receiver.respondWith(() => ({ status: 200, body: 'ok' }));
    }
  });
});
