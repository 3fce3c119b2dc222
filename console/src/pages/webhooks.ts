// Webhooks: subscribe (event picker), the signing secret shown once, send a test and see its result,
// the delivery log with every attempt, redeliver, rotate the secret, disable / re-enable, delete.
import type { components } from '../../generated/api.d.ts';
import { api, ok } from '../api.ts';
import { field, formatDate, h, notice, secretPanel, table } from '../dom.ts';
import type { Page } from '../main.ts';

type Webhook = components['schemas']['WebhookSubscription'];
type Delivery = components['schemas']['WebhookDelivery'];

const SECRET_WARNING = 'Copy this signing secret now: it is shown only this once. Your receiver verifies each delivery\'s signature with it.';

export const webhooksPage: Page = {
  title: 'Webhooks',
  async render(main) {
    const status = notice();
    const once = h('div');
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

    const run = async (what: () => Promise<string | void>) => {
      status.clear();
      try {
        const message = await what();
        await refresh();
        if (message) status.ok(message);
      } catch (error) {
        status.fail(error);
      }
    };
    const path = (webhook: Webhook) => ({ path: { webhookId: webhook.id } });

    const sendTest = (webhook: Webhook) => run(async () => {
      const result = await ok(api.POST('/api/employer/webhooks/{webhookId}/test', { params: path(webhook) }));
      await showDeliveries(webhook);
      return result.success
        ? `Test delivered: ${result.statusCode} in ${result.latencyMs} ms.`
        : `Test failed: ${result.statusCode !== null ? `the endpoint answered ${result.statusCode}` : result.error ?? 'no response'} (${result.latencyMs} ms).`;
    });
    const rotate = (webhook: Webhook) => run(async () => {
      if (!confirm(`Replace the signing secret of ${webhook.url}? Deliveries are signed with the new one from now on.`)) return;
      const rotated = await ok(api.POST('/api/employer/webhooks/{webhookId}/rotate-secret', { params: path(webhook) }));
      once.replaceChildren(secretPanel(`New signing secret of ${webhook.url}`, rotated.signingSecret, SECRET_WARNING));
    });
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
        h('span', { class: `status ${webhook.status}` }, webhook.status, webhook.disabledReason ? ` (${webhook.disabledReason})` : ''),
        h('span', {}, `${webhook.failureCount} / ${webhook.maxFailures}`),
        h('span', {}, webhook.lastDelivery ? `${webhook.lastDelivery.event}: ${webhook.lastDelivery.status} ${webhook.lastDelivery.statusCode ?? ''}` : '—'),
        h('span', { class: 'actions' },
          h('button', { type: 'button', onclick: () => sendTest(webhook), disabled: webhook.status !== 'active', 'aria-label': `Send test to ${webhook.url}` }, 'Send test'),
          h('button', { type: 'button', onclick: () => run(() => showDeliveries(webhook)), 'aria-label': `Deliveries to ${webhook.url}` }, 'Deliveries'),
          h('button', { type: 'button', onclick: () => rotate(webhook), 'aria-label': `Rotate secret of ${webhook.url}` }, 'Rotate secret'),
          webhook.status === 'active'
            ? h('button', { type: 'button', onclick: () => setStatus(webhook, 'inactive'), 'aria-label': `Disable ${webhook.url}` }, 'Disable')
            : h('button', { type: 'button', onclick: () => setStatus(webhook, 'active'), 'aria-label': `Re-enable ${webhook.url}` }, 'Re-enable'),
          h('button', { type: 'button', class: 'danger', onclick: () => remove(webhook), 'aria-label': `Delete ${webhook.url}` }, 'Delete'),
        ),
      ])));
    };

    main.append(form, status.element, once, list, log);
    await refresh();
  },
};
