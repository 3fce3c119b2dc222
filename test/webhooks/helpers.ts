// What the webhook tests share: a service trusting the test receiver's certificate, a JSON client
// for the management routes, and waiting on a condition (never on the clock).
import { capabilities } from '../../src/capabilities.ts';
import type { Capability } from '../../src/capability.ts';
import { createWebhooksCapability } from '../../src/webhooks/capability.ts';
import type { WebhookEventMappings } from '../../src/webhooks/event-types.ts';
import type { HttpsReceiver } from '../support/https-receiver.ts';
import type { TestService } from '../support/service.ts';

/** Shared by every process of one test, so each can open the secrets the others sealed. */
export const TEST_ENCRYPTION_KEY = Buffer.alloc(32, 9).toString('base64');

/** The receiver listens on 127.0.0.1, so the address check is lifted (never the https rule). */
export function webhookEnv(extra: Record<string, string> = {}): Record<string, string> {
  return { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', WEBHOOK_RETRY_BASE_MS: '1', ENCRYPTION_KEY: TEST_ENCRYPTION_KEY, ...extra };
}

/** The service's capabilities, with webhooks trusting the receiver's self-signed certificate. */
export function capabilitiesTrusting(receiver: HttpsReceiver, eventMappings?: WebhookEventMappings): Capability[] {
  const webhooks = createWebhooksCapability({ ca: receiver.ca, ...(eventMappings ? { eventMappings } : {}) });
  return capabilities.map((capability) => (capability.name === 'webhooks' ? webhooks : capability));
}

export type ApiResponse = { status: number; body: any };

/** Calls the service as one tenant's admin (session cookie) or with an API key. */
export function apiClient(service: TestService, auth: { cookie: string } | { headers: Record<string, string> }) {
  const headers = 'cookie' in auth ? service.sessionHeaders(auth.cookie) : auth.headers;
  const call = async (method: string, path: string, body?: unknown): Promise<ApiResponse> => {
    const response = await fetch(`${service.url}${path}`, {
      method,
      headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    return { status: response.status, body: text === '' ? null : JSON.parse(text) };
  };
  return {
    get: (path: string) => call('GET', path),
    post: (path: string, body?: unknown) => call('POST', path, body),
    patch: (path: string, body: unknown) => call('PATCH', path, body),
    delete: (path: string) => call('DELETE', path),
  };
}
export type ApiClient = ReturnType<typeof apiClient>;

/** Polls `probe` until it returns something other than undefined/false; fails after `timeoutMs`. */
export async function waitUntil<T>(what: string, probe: () => Promise<T | undefined | false> | T | undefined | false, timeoutMs = 40_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Creates a subscription and returns its id and secret. */
export async function subscribe(api: ApiClient, url: string, options: { events?: string[]; maxFailures?: number } = {}) {
  const created = await api.post('/api/employer/webhooks', { url, events: options.events ?? ['test.ping'], ...(options.maxFailures ? { maxFailures: options.maxFailures } : {}) });
  if (created.status !== 201) throw new Error(`creating a webhook failed: ${created.status} ${JSON.stringify(created.body)}`);
  return { id: created.body.id as string, secret: created.body.signingSecret as string };
}
