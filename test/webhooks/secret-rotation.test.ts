// A signing secret rotated with an overlap, against two receiver deployments nobody here wrote the
// verification of: one still holding the previous secret, one already switched to the new one. Each
// verifies x-webhook-signature with @octokit/webhooks-methods (the switched one reads
// x-webhook-signature-next when present, as documented) and webhook-signature with standardwebhooks.
import { verify } from '@octokit/webhooks-methods';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HttpsReceiver, ReceivedRequest } from '../support/https-receiver.ts';
import type { TestService } from '../support/service.ts';
import { startServiceWithReceiver } from '../support/service-with-receiver.ts';
import { apiClient, subscribe, waitUntil, type ApiClient } from './helpers.ts';

let receiver: HttpsReceiver;
let service: TestService;
let stop: () => Promise<void>;

beforeAll(async () => ({ service, receiver, stop } = await startServiceWithReceiver()));
afterAll(() => stop?.());

type Verdict = { sha256: boolean; standard: boolean };

/** A receiver deployment: which headers it verifies with its one secret. */
function deployment(secret: string, readsNextHeader: boolean) {
  return async (request: ReceivedRequest): Promise<Verdict> => {
    const header = (name: string) => request.headers[name] as string | undefined;
    const signature = (readsNextHeader ? header('x-webhook-signature-next') : undefined) ?? header('x-webhook-signature') ?? '';
    let standard = true;
    try {
      new Webhook(secret).verify(request.body, { 'webhook-id': header('webhook-id')!, 'webhook-timestamp': header('webhook-timestamp')!, 'webhook-signature': header('webhook-signature')! });
    } catch {
      standard = false;
    }
    return { sha256: await verify(secret, request.body, signature), standard };
  };
}

const requestsTo = (path: string) => receiver.requests.filter((request) => request.path === path);

async function pingAndReceive(api: ApiClient, webhookId: string, path: string, count: number): Promise<ReceivedRequest[]> {
  const before = requestsTo(path).length;
  for (let i = 0; i < count; i++) expect((await api.post(`/api/employer/webhooks/${webhookId}/ping`)).status).toBe(202);
  return waitUntil(`${count} more deliveries to ${path}`, () => requestsTo(path).length >= before + count && requestsTo(path).slice(before));
}

describe('signing secret rotation with an overlap', () => {
  it('during the overlap every delivery verifies with either secret; after it only with the new one', async () => {
    const tenant = await service.createTenant();
    const api = apiClient(service, tenant);
    const path = '/overlap';
    const { id, secret: previous } = await subscribe(api, `${receiver.url}${path}`);

    const rotated = await api.post(`/api/employer/webhooks/${id}/rotate-secret`, { overlapSeconds: 3600 });
    expect(rotated.status).toBe(200);
    const next = rotated.body.signingSecret as string;
    const overlapEndsAt = Date.parse(rotated.body.overlapEndsAt);
    expect(overlapEndsAt - Date.now()).toBeGreaterThan(3500_000);
    expect((await api.get(`/api/employer/webhooks/${id}`)).body.signingSecretOverlapEndsAt).toBe(rotated.body.overlapEndsAt);

    const notSwitched = deployment(previous, false);
    const switched = deployment(next, true);
    const during = await pingAndReceive(api, id, path, 5);
    // The direct test is signed the same way.
    expect((await api.post(`/api/employer/webhooks/${id}/test`)).body.success).toBe(true);
    during.push(requestsTo(path).at(-1)!);
    for (const request of during) {
      expect(await notSwitched(request)).toEqual({ sha256: true, standard: true });
      expect(await switched(request)).toEqual({ sha256: true, standard: true });
    }

    // One overlap at a time; ending it early leaves the new secret alone.
    expect((await api.post(`/api/employer/webhooks/${id}/rotate-secret`)).body.code).toBe('SECRET_OVERLAP_ACTIVE');
    const ended = await api.post(`/api/employer/webhooks/${id}/end-secret-overlap`);
    expect(ended.status).toBe(200);
    expect(ended.body.signingSecretOverlapEndsAt).toBeNull();

    const after = await pingAndReceive(api, id, path, 3);
    for (const request of after) {
      expect(request.headers).not.toHaveProperty('x-webhook-signature-next');
      expect(await notSwitched(request)).toEqual({ sha256: false, standard: false });
      expect(await switched(request)).toEqual({ sha256: true, standard: true });
    }

    await waitUntil('the rotation and its early end audited', async () => {
      const actions = ((await api.get('/api/employer/audit-events')).body.entries as any[]).map((entry) => entry.action);
      return actions.includes('webhook.secret.rotate') && actions.includes('webhook.secret.overlap_end');
    });
  });

  it('stops signing with the previous secret when the overlap runs out', async () => {
    const tenant = await service.createTenant();
    const api = apiClient(service, tenant);
    const path = '/overlap-runs-out';
    const { id, secret: previous } = await subscribe(api, `${receiver.url}${path}`);
    const rotated = await api.post(`/api/employer/webhooks/${id}/rotate-secret`, { overlapSeconds: 1 });
    const next = rotated.body.signingSecret as string;
    await waitUntil('the overlap to end', async () => (await api.get(`/api/employer/webhooks/${id}`)).body.signingSecretOverlapEndsAt === null);

    const [request] = await pingAndReceive(api, id, path, 1);
    expect(await deployment(previous, false)(request!)).toEqual({ sha256: false, standard: false });
    expect(await deployment(next, true)(request!)).toEqual({ sha256: true, standard: true });
    // A rotation after the end needs no early end first.
    expect((await api.post(`/api/employer/webhooks/${id}/rotate-secret`, { overlapSeconds: 60 })).status).toBe(200);
  });

  it('bounds the overlap to 7 days', async () => {
    const api = apiClient(service, await service.createTenant());
    const { id } = await subscribe(api, `${receiver.url}/bounds`);
    expect((await api.post(`/api/employer/webhooks/${id}/rotate-secret`, { overlapSeconds: 7 * 86400 + 1 })).status).toBe(400);
    expect((await api.post(`/api/employer/webhooks/${id}/rotate-secret`, { overlapSeconds: -1 })).status).toBe(400);
  });
});
