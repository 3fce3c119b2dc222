// Webhooks: subscribe (event picker), the signing secret shown once, send a test and see its result,
// the delivery log with every attempt, redeliver, rotate the secret with an overlap (and end it early),
// recover every failed delivery after an outage, why and since when a subscription is disabled,
// disable / re-enable, delete.
import type { components } from '../../generated/api.d.ts';
import { api, ok } from '../api.ts';
import { field, formatDate, h, notice, refreshingActions, secretPanel, table } from '../dom.ts';
import type { Page } from '../main.ts';

type Webhook = components['schemas']['WebhookSubscription'];
type Delivery = components['schemas']['WebhookDelivery'];

/** Why a subscription was disabled, in words. */
const DISABLED_REASONS: Record<NonNullable<Webhook['disabledReason']>, string> = {
  manual: 'disabled by an administrator',
  failure_threshold: 'disabled after too many failed deliveries',
  gone: 'disabled: the endpoint answered 410 Gone',
};

const SECRET_WARNING = 'Copy this signing secret now: it is shown only this once. Your receiver verifies each delivery\'s signature with it.';

export const webhooksPage: Page = {
  title: 'Webhooks',
  async render(main) {
    const status = notice();
    const once = h('div');
    // The rotation or recovery form of one subscription, opened from its row.
    const panel = h('div');
    const closePanel = () => panel.replaceChildren();
    const list = h('div');
    const log = h('section', { 'aria-label': 'Delivery log' });
    const { availableEvents } = await ok(api.GET('/api/employer/webhooks', { params: { query: {} } }));

    const url = h('input', { name: 'url', type: 'url', required: true, placeholder: 'https://example.com/webhooks', autocomplete: 'url' });
    const description = h('input', { name: 'description', maxlength: 500 });
    const eventBoxes = availableEvents.map((event) => h('input', { type: 'checkbox', name: 'events', value: event, id: `event-${event.replace(/\W/g, '-')}` }));
    const form = h('form', {
      'aria-label': 'Create a webhook subscription',
      onsubmit: async (event: Event) => {
        event.preventDefault();
        status.clear();
        const events = eventBoxes.filter((box) => box.checked).map((box) => box.value);
        if (events.length === 0) return status.fail('Choose at least one event.');
        try {
          const created = await ok(api.POST('/api/employer/webhooks', { body: { url: url.value, events, ...(description.value ? { description: description.value } : {}) } }));
          once.replaceChildren(secretPanel(`Signing secret of ${created.url}`, created.signingSecret, SECRET_WARNING));
          form.reset();
          await refresh();
        } catch (error) {
          status.fail(error);
        }
      },
    },
      h('h2', {}, 'Subscribe an endpoint'),
      field('HTTPS URL', url),
      field('Description (optional)', description),
      h('fieldset', {}, h('legend', {}, 'Events'), eventBoxes.map((box) => h('div', { class: 'check' }, box, h('label', { for: box.id }, box.value)))),
      h('button', { type: 'submit' }, 'Subscribe'),
    );

    const run = refreshingActions(status, () => refresh()); // refresh is declared below
    const path = (webhook: Webhook) => ({ path: { webhookId: webhook.id } });

    const sendTest = (webhook: Webhook) => run(async () => {
      const result = await ok(api.POST('/api/employer/webhooks/{webhookId}/test', { params: path(webhook) }));
      await showDeliveries(webhook);
      return result.success
        ? `Test delivered: ${result.statusCode} in ${result.latencyMs} ms.`
        : `Test failed: ${result.statusCode !== null ? `the endpoint answered ${result.statusCode}` : result.error ?? 'no response'} (${result.latencyMs} ms).`;
    });
    const openRotate = (webhook: Webhook) => {
      const hours = h('input', { name: 'overlapHours', type: 'number', min: 0, max: 168, step: 'any', value: 24, required: true });
      const rotateForm = h('form', {
        'aria-label': `Rotate the secret of ${webhook.url}`,
        onsubmit: (event: Event) => {
          event.preventDefault();
          return run(async () => {
            const rotated = await ok(api.POST('/api/employer/webhooks/{webhookId}/rotate-secret', {
              params: path(webhook),
              body: { overlapSeconds: Math.round(Number(hours.value) * 3600) },
            }));
            closePanel();
            once.replaceChildren(secretPanel(`New signing secret of ${webhook.url}`, rotated.signingSecret, rotated.overlapEndsAt
              ? `${SECRET_WARNING} Until ${formatDate(rotated.overlapEndsAt)} deliveries are signed with both secrets: x-webhook-signature with the old one, x-webhook-signature-next with the new one, webhook-signature with both.`
              : SECRET_WARNING));
          });
        },
      },
        h('h2', {}, `Rotate the signing secret of ${webhook.url}`),
        field('Overlap (hours)', hours, 'The old secret keeps signing for this long, so receivers can switch without failing. 0: replace it at once; at most 168 (7 days).'),
        h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Rotate secret'), h('button', { type: 'button', onclick: closePanel }, 'Cancel')),
      );
      panel.replaceChildren(rotateForm);
      hours.focus();
    };
    const endOverlap = (webhook: Webhook) => run(async () => {
      if (!confirm(`Stop signing deliveries to ${webhook.url} with the old secret now? Receivers still using it will fail.`)) return;
      await ok(api.POST('/api/employer/webhooks/{webhookId}/end-secret-overlap', { params: path(webhook) }));
      return `Only the new secret signs deliveries to ${webhook.url} now.`;
    });
    const openRecover = (webhook: Webhook) => {
      // From when the subscription was disabled, or a day back; the administrator adjusts it to the outage's start.
      const from = new Date(webhook.disabledAt ?? Date.now() - 86_400_000);
      const since = h('input', {
        name: 'since', type: 'datetime-local', required: true,
        value: new Date(from.getTime() - from.getTimezoneOffset() * 60_000).toISOString().slice(0, 16),
      });
      const recoverForm = h('form', {
        'aria-label': `Recover deliveries to ${webhook.url}`,
        onsubmit: (event: Event) => {
          event.preventDefault();
          return run(async () => {
            const recovery = await ok(api.POST('/api/employer/webhooks/{webhookId}/recover', { params: path(webhook), body: { since: new Date(since.value).toISOString() } }));
            closePanel();
            await showDeliveries(webhook);
            return `${recovery.total} failed deliveries are being sent again, in order, one at a time.`;
          });
        },
      },
        h('h2', {}, `Recover deliveries to ${webhook.url}`),
        field('Failed since', since, 'Every delivery that failed since then is sent again once, in its original order, at the pace the endpoint answers.'),
        h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Recover'), h('button', { type: 'button', onclick: closePanel }, 'Cancel')),
      );
      panel.replaceChildren(recoverForm);
      since.focus();
    };
    const setStatus = (webhook: Webhook, next: 'active' | 'inactive') => run(async () => {
      if (next === 'inactive' && !confirm(`Disable ${webhook.url}? No events are delivered while it is disabled.`)) return;
      await ok(api.PATCH('/api/employer/webhooks/{webhookId}', { params: path(webhook), body: { status: next } }));
      return `${webhook.url} ${next === 'active' ? 're-enabled' : 'disabled'}.`;
    });
    const remove = (webhook: Webhook) => run(async () => {
      if (!confirm(`Delete the subscription ${webhook.url}? This cannot be undone.`)) return;
      await ok(api.DELETE('/api/employer/webhooks/{webhookId}', { params: path(webhook) }));
      log.replaceChildren();
      return `${webhook.url} deleted.`;
    });

    const showDeliveries = async (webhook: Webhook) => {
      const { deliveries } = await ok(api.GET('/api/employer/webhooks/{webhookId}/deliveries', { params: { ...path(webhook), query: {} } }));
      log.replaceChildren(
        h('h2', {}, `Deliveries to ${webhook.url}`),
        h('button', { type: 'button', onclick: () => run(() => showDeliveries(webhook)) }, 'Refresh deliveries'),
        deliveries.length === 0 ? h('p', {}, 'No deliveries yet.') : h('ol', { class: 'deliveries' }, deliveries.map((delivery) => deliveryItem(webhook, delivery))),
      );
    };
    const deliveryItem = (webhook: Webhook, delivery: Delivery) =>
      h('li', { 'data-testid': 'delivery' },
        h('p', {}, h('strong', {}, delivery.event), ` (${delivery.trigger}) — ${delivery.status}, ${delivery.attemptCount} attempt(s), ${formatDate(delivery.createdAt)}`),
        table(`Attempts of delivery ${delivery.id}`, ['Attempt', 'Sent', 'Status code', 'Latency', 'Response'], delivery.attempts.map((attempt) => [
          h('span', {}, attempt.attempt),
          h('span', {}, formatDate(attempt.requestedAt)),
          h('span', {}, attempt.statusCode ?? attempt.error ?? '—'),
          h('span', {}, `${attempt.latencyMs} ms`),
          h('code', { class: 'body' }, attempt.responseBody.length > 200 ? `${attempt.responseBody.slice(0, 200)}…` : attempt.responseBody),
        ])),
        delivery.status === 'pending' ? null : h('button', {
          type: 'button',
          onclick: () => run(async () => {
            await ok(api.POST('/api/employer/webhooks/{webhookId}/deliveries/{deliveryId}/redeliver', { params: { path: { webhookId: webhook.id, deliveryId: delivery.id } } }));
            await showDeliveries(webhook);
            return 'Redelivery queued.';
          }),
        }, 'Redeliver'),
      );

    const refresh = async () => {
      const { webhooks } = await ok(api.GET('/api/employer/webhooks', { params: { query: { limit: 100 } } }));
      list.replaceChildren(table('Webhook subscriptions', ['Endpoint', 'Events', 'Status', 'Failures', 'Last delivery', 'Actions'], webhooks.map((webhook) => [
        h('span', {}, webhook.url, webhook.description ? h('small', {}, h('br'), webhook.description) : null),
        h('span', {}, webhook.events.join(', ')),
        h('span', { class: `status ${webhook.status}` }, webhook.status,
          webhook.disabledReason ? h('small', {}, h('br'), `${DISABLED_REASONS[webhook.disabledReason]} since ${formatDate(webhook.disabledAt)}`) : null,
          webhook.signingSecretOverlapEndsAt ? h('small', {}, h('br'), `old secret signs until ${formatDate(webhook.signingSecretOverlapEndsAt)}`) : null),
        h('span', {}, `${webhook.failureCount} / ${webhook.maxFailures}`),
        h('span', {}, webhook.lastDelivery ? `${webhook.lastDelivery.event}: ${webhook.lastDelivery.status} ${webhook.lastDelivery.statusCode ?? ''}` : '—'),
        h('span', { class: 'actions' },
          h('button', { type: 'button', onclick: () => sendTest(webhook), disabled: webhook.status !== 'active', 'aria-label': `Send test to ${webhook.url}` }, 'Send test'),
          h('button', { type: 'button', onclick: () => run(() => showDeliveries(webhook)), 'aria-label': `Deliveries to ${webhook.url}` }, 'Deliveries'),
          webhook.signingSecretOverlapEndsAt
            ? h('button', { type: 'button', onclick: () => endOverlap(webhook), 'aria-label': `End the secret overlap of ${webhook.url}` }, 'End overlap')
            : h('button', { type: 'button', onclick: () => openRotate(webhook), 'aria-label': `Rotate secret of ${webhook.url}` }, 'Rotate secret'),
          h('button', { type: 'button', onclick: () => openRecover(webhook), disabled: webhook.status !== 'active', 'aria-label': `Recover deliveries to ${webhook.url}` }, 'Recover'),
          webhook.status === 'active'
            ? h('button', { type: 'button', onclick: () => setStatus(webhook, 'inactive'), 'aria-label': `Disable ${webhook.url}` }, 'Disable')
            : h('button', { type: 'button', onclick: () => setStatus(webhook, 'active'), 'aria-label': `Re-enable ${webhook.url}` }, 'Re-enable'),
          h('button', { type: 'button', class: 'danger', onclick: () => remove(webhook), 'aria-label': `Delete ${webhook.url}` }, 'Delete'),
        ),
      ])));
    };

    main.append(form, status.element, once, panel, list, log);
    await refresh();
  },
};
