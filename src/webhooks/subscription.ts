// The webhook subscription aggregate: stream tenant-<employerId>.webhook-<whk_id>. Its events are the
// subscription's whole history, failure counting included, so auto-disable is a business rule here
// (not a side effect in the worker) and every change is audited. The signing secret travels only
// sealed (src/crypto/secret-box.ts, with the webhook id as associated data).
import { DomainError, type Decider } from '../event-store/decider.ts';
import { tenantStream } from '../event-store/port.ts';
import type { WebhookEvent, WebhookSettings, WebhookStatus } from './events.ts';

export const DEFAULT_MAX_FAILURES = 10;

export type WebhookCommand =
  | ({ type: 'CreateWebhook'; webhookId: string; sealedSecret: string; now: string } & WebhookSettings)
  | { type: 'UpdateWebhook'; changes: Partial<WebhookSettings>; status?: WebhookStatus }
  | { type: 'DeleteWebhook' }
  /** overlapEndsAt: until when the previous secret signs beside the new one; null replaces it at once. */
  | { type: 'RotateSigningSecret'; sealedSecret: string; overlapEndsAt: string | null; now: string }
  | { type: 'EndSecretOverlap'; now: string }
  | { type: 'RequestPing' }
  | { type: 'RequestRedelivery'; deliveryId: string }
  | { type: 'RequestRecovery'; recoveryId: string; since: string }
  // From the delivery worker. Each is idempotent per delivery id: a worker that crashed after
  // recording one and re-runs the attempt records nothing twice.
  | { type: 'RecordDeliveryExhausted'; deliveryId: string }
  | { type: 'RecordDeliverySucceeded'; deliveryId: string }
  | { type: 'RecordTargetGone'; deliveryId: string };

export type WebhookState =
  | { status: 'absent' }
  | { status: 'deleted' }
  | {
      status: WebhookStatus;
      webhookId: string;
      url: string;
      events: string[];
      description: string | null;
      maxFailures: number;
      failureCount: number;
      /** Deliveries counted in failureCount (reset with it), so counting one twice is impossible. */
      exhaustedDeliveryIds: string[];
      /** The last rotation's overlap end (past or future); null when none or ended early. */
      secretOverlapEndsAt: string | null;
    };

const notFound = () => new DomainError('not_found', 'NOT_FOUND', 'Webhook subscription was not found.');
const inactive = () => new DomainError('invalid', 'WEBHOOK_INACTIVE', 'The webhook subscription is inactive; set status to active with PATCH first.');

export const webhookDecider: Decider<WebhookCommand, WebhookEvent, WebhookState> = {
  initialState: () => ({ status: 'absent' }),
  evolve: (state, event) => {
    if (event.type === 'WebhookSubscriptionCreated') {
      const { webhookId, url, events, description, maxFailures } = event.data;
      return { status: 'active', webhookId, url, events, description, maxFailures, failureCount: 0, exhaustedDeliveryIds: [], secretOverlapEndsAt: null };
    }
    if (state.status === 'absent' || state.status === 'deleted') return state;
    switch (event.type) {
      case 'WebhookSubscriptionUpdated':
        return { ...state, ...event.data.changes };
      case 'WebhookSubscriptionDeactivated':
        return { ...state, status: 'inactive' };
      case 'WebhookSubscriptionActivated':
        return { ...state, status: 'active', failureCount: 0, exhaustedDeliveryIds: [] };
      case 'WebhookSubscriptionDeleted':
        return { status: 'deleted' };
      case 'WebhookDeliveryExhausted':
        return { ...state, failureCount: event.data.failureCount, exhaustedDeliveryIds: [...state.exhaustedDeliveryIds, event.data.deliveryId] };
      case 'WebhookFailureCountReset':
        return { ...state, failureCount: 0, exhaustedDeliveryIds: [] };
      case 'WebhookSigningSecretRotated':
        return { ...state, secretOverlapEndsAt: event.data.overlapEndsAt };
      case 'WebhookSecretOverlapEnded':
        return { ...state, secretOverlapEndsAt: null };
      default:
        return state;
    }
  },
  decide: (command, state) => {
    if (command.type === 'CreateWebhook') {
      if (state.status !== 'absent') throw new DomainError('conflict', 'CONFLICT', 'The webhook subscription already exists.');
      const { type: _type, now, ...data } = command;
      return [{ type: 'WebhookSubscriptionCreated', data: { ...data, createdAt: now } }];
    }
    if (state.status === 'absent' || state.status === 'deleted') {
      // The worker may finish an attempt after the subscription was deleted: nothing left to record.
      if (command.type === 'RecordDeliveryExhausted' || command.type === 'RecordDeliverySucceeded' || command.type === 'RecordTargetGone') return [];
      throw notFound();
    }
    const { webhookId } = state;
    switch (command.type) {
      case 'UpdateWebhook': {
        const changes = changedSettings(state, command.changes);
        const events: WebhookEvent[] = Object.keys(changes).length > 0 ? [{ type: 'WebhookSubscriptionUpdated', data: { webhookId, changes } }] : [];
        if (command.status === 'active' && state.status === 'inactive') events.push({ type: 'WebhookSubscriptionActivated', data: { webhookId } });
        if (command.status === 'inactive' && state.status === 'active') {
          events.push({ type: 'WebhookSubscriptionDeactivated', data: { webhookId, reason: 'manual' } });
        }
        return events;
      }
      case 'DeleteWebhook':
        return [{ type: 'WebhookSubscriptionDeleted', data: { webhookId } }];
      case 'RotateSigningSecret':
        // A third secret would leave receivers of the oldest one failing: one overlap at a time.
        if (inOverlap(state, command.now)) {
          throw new DomainError('conflict', 'SECRET_OVERLAP_ACTIVE', `The previous rotation's overlap runs until ${state.secretOverlapEndsAt}; end it first (POST .../end-secret-overlap).`);
        }
        return [{ type: 'WebhookSigningSecretRotated', data: { webhookId, sealedSecret: command.sealedSecret, overlapEndsAt: command.overlapEndsAt } }];
      case 'EndSecretOverlap':
        return inOverlap(state, command.now) ? [{ type: 'WebhookSecretOverlapEnded', data: { webhookId } }] : [];
      case 'RequestPing':
        if (state.status !== 'active') throw inactive();
        return [{ type: 'WebhookPingRequested', data: { webhookId } }];
      case 'RequestRedelivery':
        if (state.status !== 'active') throw inactive();
        return [{ type: 'WebhookRedeliveryRequested', data: { webhookId, deliveryId: command.deliveryId } }];
      case 'RequestRecovery':
        if (state.status !== 'active') throw inactive();
        return [{ type: 'WebhookRecoveryRequested', data: { webhookId, recoveryId: command.recoveryId, since: command.since } }];
      case 'RecordDeliveryExhausted': {
        if (state.exhaustedDeliveryIds.includes(command.deliveryId)) return [];
        const failureCount = state.failureCount + 1;
        const events: WebhookEvent[] = [{ type: 'WebhookDeliveryExhausted', data: { webhookId, deliveryId: command.deliveryId, failureCount } }];
        if (state.status === 'active' && failureCount >= state.maxFailures) {
          events.push({ type: 'WebhookSubscriptionDeactivated', data: { webhookId, reason: 'failure_threshold', deliveryId: command.deliveryId } });
        }
        return events;
      }
      case 'RecordDeliverySucceeded':
        return state.failureCount === 0 ? [] : [{ type: 'WebhookFailureCountReset', data: { webhookId, deliveryId: command.deliveryId } }];
      case 'RecordTargetGone':
        return state.status === 'active' ? [{ type: 'WebhookSubscriptionDeactivated', data: { webhookId, reason: 'gone', deliveryId: command.deliveryId } }] : [];
    }
  },
};

const inOverlap = (state: { secretOverlapEndsAt: string | null }, now: string) =>
  state.secretOverlapEndsAt !== null && Date.parse(state.secretOverlapEndsAt) > Date.parse(now);

function changedSettings(current: WebhookSettings, requested: Partial<WebhookSettings>): Partial<WebhookSettings> {
  const changes: Partial<WebhookSettings> = {};
  if (requested.url !== undefined && requested.url !== current.url) changes.url = requested.url;
  if (requested.events !== undefined && requested.events.join('\n') !== current.events.join('\n')) changes.events = requested.events;
  if (requested.description !== undefined && requested.description !== current.description) changes.description = requested.description;
  if (requested.maxFailures !== undefined && requested.maxFailures !== current.maxFailures) changes.maxFailures = requested.maxFailures;
  return changes;
}

export const webhookStream = (employerId: string, webhookId: string) => tenantStream(employerId, 'webhook', webhookId);
