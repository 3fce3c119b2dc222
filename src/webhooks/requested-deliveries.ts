// Deliveries an employer asks for (a queued ping, a redelivery) are queued work of its own: at most
// WEBHOOK_REQUESTED_DELIVERIES_MAX_IN_FLIGHT in flight per employer. A request holds an admission
// ticket (src/worker/admission.ts) until its delivery is pending: the fan-out of the ping's event,
// or the requeue of the redelivery, takes a ticket over in the statement that makes the delivery
// pending. The pending delivery then counts until it has succeeded, failed or been cancelled.
import { randomUUID } from 'node:crypto';
import type { AppContext } from '../app-context.ts';
import { tooManyInFlight, withAdmission, type Admission } from '../worker/admission.ts';
import { pendingRequestedDeliveries } from './deliveries.ts';

export const REQUESTED_DELIVERY = 'webhook-requested-delivery';
/** What a refused client is told to wait. */
const RETRY_AFTER_SECONDS = 5;

export function requestedDeliveriesDescription(ctx: AppContext): string {
  return `An employer may have ${ctx.config.WEBHOOK_REQUESTED_DELIVERIES_MAX_IN_FLIGHT} deliveries it asked for (queued pings and redeliveries, WEBHOOK_REQUESTED_DELIVERIES_MAX_IN_FLIGHT) ` +
    'in flight (queued, or pending with retries to come); another request is 429 TOO_MANY_DELIVERIES_IN_FLIGHT with Retry-After, and changes nothing.';
}

/**
 * Runs `request` (the command that queues the delivery) under an admission ticket; refuses with 429
 * TOO_MANY_DELIVERIES_IN_FLIGHT when the employer's limit is reached. A request that fails gives its ticket back.
 */
export async function withRequestedDelivery<T>(ctx: AppContext, employerId: string, request: () => Promise<T>): Promise<T> {
  const admission: Admission = { employerId, kind: REQUESTED_DELIVERY, workId: randomUUID() };
  const limit = ctx.config.WEBHOOK_REQUESTED_DELIVERIES_MAX_IN_FLIGHT;
  const refusal = () => tooManyInFlight('TOO_MANY_DELIVERIES_IN_FLIGHT', 'Queued pings and redeliveries in flight', limit, RETRY_AFTER_SECONDS);
  return withAdmission(ctx.db.slonik, admission, { limit, handedOver: pendingRequestedDeliveries(employerId), refusal }, request);
}
