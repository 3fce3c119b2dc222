// The subscription's business rules, given / when / then, without a database.
import { describe, expect, it } from 'vitest';
import { retryDelayMs, MAX_ATTEMPTS } from '../../src/webhooks/retry-schedule.ts';
import type { WebhookEvent } from '../../src/webhooks/events.ts';
import { webhookDecider } from '../../src/webhooks/subscription.ts';
import { deciderSpec } from '../support/decider.ts';

const given = deciderSpec(webhookDecider);
const webhookId = 'whk_1';
const created: WebhookEvent = {
  type: 'WebhookSubscriptionCreated',
  data: { webhookId, url: 'https://hooks.example.com/in', events: ['test.ping'], description: null, maxFailures: 2, sealedSecret: 'v1.x.y.z', createdAt: '2026-03-01T00:00:00.000Z' },
};
const exhausted = (deliveryId: string, failureCount: number): WebhookEvent => ({ type: 'WebhookDeliveryExhausted', data: { webhookId, deliveryId, failureCount } });
const disabledByFailures: WebhookEvent = { type: 'WebhookSubscriptionDeactivated', data: { webhookId, reason: 'failure_threshold', deliveryId: 'd2' } };

describe('webhook subscription decider', () => {
  it('counts an exhausted delivery once, even when the worker records it again', () => {
    given([created]).when({ type: 'RecordDeliveryExhausted', deliveryId: 'd1' }).then([exhausted('d1', 1)]);
    given([created, exhausted('d1', 1)]).when({ type: 'RecordDeliveryExhausted', deliveryId: 'd1' }).then([]);
  });

  it('disables the subscription when failureCount reaches maxFailures', () => {
    given([created, exhausted('d1', 1)]).when({ type: 'RecordDeliveryExhausted', deliveryId: 'd2' }).then([exhausted('d2', 2), disabledByFailures]);
  });

  it('resets failureCount on a success after failures, and records nothing for a success otherwise', () => {
    given([created, exhausted('d1', 1)])
      .when({ type: 'RecordDeliverySucceeded', deliveryId: 'd2' })
      .then([{ type: 'WebhookFailureCountReset', data: { webhookId, deliveryId: 'd2' } }]);
    given([created]).when({ type: 'RecordDeliverySucceeded', deliveryId: 'd2' }).then([]);
  });

  it('re-enables with PATCH status active, resetting failureCount', () => {
    const history = [created, exhausted('d1', 1), exhausted('d2', 2), disabledByFailures];
    given(history).when({ type: 'UpdateWebhook', changes: {}, status: 'active' }).then([{ type: 'WebhookSubscriptionActivated', data: { webhookId } }]);
    const state = [...history, { type: 'WebhookSubscriptionActivated', data: { webhookId } } as WebhookEvent].reduce(webhookDecider.evolve, webhookDecider.initialState());
    expect(state).toMatchObject({ status: 'active', failureCount: 0, exhaustedDeliveryIds: [] });
  });

  it('disables at once on 410 Gone, only while active', () => {
    given([created])
      .when({ type: 'RecordTargetGone', deliveryId: 'd1' })
      .then([{ type: 'WebhookSubscriptionDeactivated', data: { webhookId, reason: 'gone', deliveryId: 'd1' } }]);
    given([created, disabledByFailures]).when({ type: 'RecordTargetGone', deliveryId: 'd1' }).then([]);
  });

  it('records only what changed', () => {
    given([created]).when({ type: 'UpdateWebhook', changes: { url: 'https://hooks.example.com/in', maxFailures: 5 } })
      .then([{ type: 'WebhookSubscriptionUpdated', data: { webhookId, changes: { maxFailures: 5 } } }]);
    given([created]).when({ type: 'UpdateWebhook', changes: {}, status: 'active' }).then([]);
  });

  it('refuses pings and redeliveries of an inactive subscription, and everything on a deleted one', () => {
    given([created, disabledByFailures]).when({ type: 'RequestPing' }).thenThrows({ kind: 'invalid', code: 'WEBHOOK_INACTIVE' });
    given([created, disabledByFailures]).when({ type: 'RequestRedelivery', deliveryId: 'd1' }).thenThrows({ kind: 'invalid', code: 'WEBHOOK_INACTIVE' });
    given([created, disabledByFailures]).when({ type: 'RequestRecovery', recoveryId: 'r1', since: '2026-03-01T00:00:00.000Z' }).thenThrows({ kind: 'invalid', code: 'WEBHOOK_INACTIVE' });
    given([created]).when({ type: 'RequestRecovery', recoveryId: 'r1', since: '2026-03-01T00:00:00.000Z' })
      .then([{ type: 'WebhookRecoveryRequested', data: { webhookId, recoveryId: 'r1', since: '2026-03-01T00:00:00.000Z' } }]);
    const deleted: WebhookEvent = { type: 'WebhookSubscriptionDeleted', data: { webhookId } };
    given([created, deleted]).when({ type: 'UpdateWebhook', changes: {}, status: 'active' }).thenThrows({ kind: 'not_found', code: 'NOT_FOUND' });
    given([]).when({ type: 'DeleteWebhook' }).thenThrows({ kind: 'not_found' });
    // A worker finishing an attempt after the deletion has nothing to record.
    given([created, deleted]).when({ type: 'RecordDeliveryExhausted', deliveryId: 'd1' }).then([]);
  });
});

describe('retry schedule', () => {
  const middle = () => 0.5; // no jitter
  it("follows Svix's schedule scaled by the base, then stops", () => {
    const delays = Array.from({ length: MAX_ATTEMPTS }, (_, i) => retryDelayMs(i + 1, { baseMs: 5000, retryAfterMs: null, random: middle }));
    expect(delays).toEqual([5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, null]);
  });

  it('jitters by at most 20 %', () => {
    expect(retryDelayMs(2, { baseMs: 5000, retryAfterMs: null, random: () => 0 })).toBe(240_000);
    expect(retryDelayMs(2, { baseMs: 5000, retryAfterMs: null, random: () => 1 })).toBe(360_000);
  });

  it('waits at least as long as Retry-After asks, up to a day', () => {
    expect(retryDelayMs(1, { baseMs: 5000, retryAfterMs: 60_000, random: middle })).toBe(60_000);
    expect(retryDelayMs(2, { baseMs: 5000, retryAfterMs: 1_000, random: middle })).toBe(300_000);
    expect(retryDelayMs(1, { baseMs: 5000, retryAfterMs: 10 * 86_400_000, random: middle })).toBe(86_400_000);
    expect(retryDelayMs(6, { baseMs: 5000, retryAfterMs: 1_000, random: middle })).toBeNull();
  });
});

describe('signing secret rotation with an overlap', () => {
  const rotated = (overlapEndsAt: string | null): WebhookEvent => ({ type: 'WebhookSigningSecretRotated', data: { webhookId, sealedSecret: 'v1.new', overlapEndsAt } });
  const rotate = (now: string) => ({ type: 'RotateSigningSecret', sealedSecret: 'v1.new', overlapEndsAt: '2026-03-03T00:00:00.000Z', now }) as const;

  it('records the overlap chosen, and refuses a second rotation while it lasts', () => {
    given([created]).when(rotate('2026-03-02T00:00:00.000Z')).then([rotated('2026-03-03T00:00:00.000Z')]);
    given([created, rotated('2026-03-03T00:00:00.000Z')]).when(rotate('2026-03-02T12:00:00.000Z')).thenThrows({ kind: 'conflict', code: 'SECRET_OVERLAP_ACTIVE' });
  });

  it('rotates again once the overlap is over, by its end or ended early', () => {
    given([created, rotated('2026-03-03T00:00:00.000Z')]).when(rotate('2026-03-03T00:00:00.000Z')).then([rotated('2026-03-03T00:00:00.000Z')]);
    given([created, rotated('2026-03-03T00:00:00.000Z'), { type: 'WebhookSecretOverlapEnded', data: { webhookId } }])
      .when(rotate('2026-03-02T12:00:00.000Z'))
      .then([rotated('2026-03-03T00:00:00.000Z')]);
    given([created, rotated(null)]).when(rotate('2026-03-02T12:00:00.000Z')).then([rotated('2026-03-03T00:00:00.000Z')]);
  });

  it('ends an overlap early only while it lasts', () => {
    given([created, rotated('2026-03-03T00:00:00.000Z')])
      .when({ type: 'EndSecretOverlap', now: '2026-03-02T12:00:00.000Z' })
      .then([{ type: 'WebhookSecretOverlapEnded', data: { webhookId } }]);
    given([created, rotated('2026-03-03T00:00:00.000Z')]).when({ type: 'EndSecretOverlap', now: '2026-03-03T00:00:01.000Z' }).then([]);
    given([created]).when({ type: 'EndSecretOverlap', now: '2026-03-02T12:00:00.000Z' }).then([]);
  });
});
