// One attempt of one delivery, queued or direct: open the sealed secret, sign the body afresh (the
// Standard Webhooks timestamp is the attempt's own), send through the process's safe dispatcher.
import type { KeyObject } from 'node:crypto';
import type { Dispatcher } from 'undici';
import { decryptSecret, SecretBoxError } from '../crypto/secret-box.ts';
import { CURRENT_API_VERSION } from '../http/versioning.ts';
import { sendWebhookAttempt, type WebhookAttemptResult } from './send.ts';
import { buildWebhookRequest } from './signing.ts';

export type DeliveryTarget = {
  deliveryId: string;
  employerId: string;
  webhookId: string;
  eventType: string;
  /** The event's time: body `timestamp` and x-webhook-timestamp, the same on every attempt. */
  timestamp: string;
  data: Record<string, unknown>;
  url: string;
  sealedSecret: string;
  /** The secret the last rotation replaced, while its overlap lasts (signs beside the new one); null otherwise. */
  sealedPreviousSecret: string | null;
};

export async function attemptDelivery(
  deps: { dispatcher: Dispatcher; encryptionKey: KeyObject },
  target: DeliveryTarget,
): Promise<{ requestedAt: Date; result: WebhookAttemptResult }> {
  const secret = decryptSecret(target.sealedSecret, deps.encryptionKey, target.webhookId);
  const previousSecret = target.sealedPreviousSecret === null ? null : decryptSecret(target.sealedPreviousSecret, deps.encryptionKey, target.webhookId);
  const requestedAt = new Date();
  const request = buildWebhookRequest({
    deliveryId: target.deliveryId,
    eventType: target.eventType,
    timestamp: target.timestamp,
    apiVersion: CURRENT_API_VERSION,
    employerId: target.employerId,
    data: target.data,
    secret,
    previousSecret,
    signedAt: requestedAt,
  });
  const result = await sendWebhookAttempt({ url: target.url, ...request, dispatcher: deps.dispatcher });
  return { requestedAt, result };
}

/** The result of an attempt that failed before anything was sent; the error says why, without secrets. */
export function notSent(error: unknown): WebhookAttemptResult {
  const reason = error instanceof SecretBoxError ? `the signing secret could not be opened (${error.message})` : 'the request could not be prepared';
  return { ok: false, statusCode: null, latencyMs: 0, responseBody: '', error: `not sent: ${reason}`, retryAfterMs: null, gone: false };
}
