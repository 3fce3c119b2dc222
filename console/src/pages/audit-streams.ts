// Audit streams: send the audit log to a SIEM (generic signed NDJSON, Splunk HEC, Datadog logs), the
// ndjson signing secret shown once, each stream's lag and last failure, pause / resume, a new vendor
// token, delete.
import type { components } from '../../generated/api.d.ts';
import { api, ok } from '../api.ts';
import { field, formatDate, h, notice, refreshingActions, secretPanel, table } from '../dom.ts';
import type { Page } from '../main.ts';

type AuditStream = components['schemas']['AuditStream'];
type Preset = AuditStream['preset'];

const PRESETS: Record<Preset, string> = {
  ndjson: 'Generic NDJSON POST (signed like webhooks)',
  splunk_hec: 'Splunk HTTP Event Collector',
  datadog: 'Datadog logs',
};
const SECRET_WARNING = 'Copy this signing secret now: it is shown only this once. Your receiver verifies each batch\'s signature with it.';

function lagText(stream: AuditStream): string {
  if (stream.lag.entries === 0) return 'up to date';
  return `${stream.lag.entries} ${stream.lag.entries === 1 ? 'entry' : 'entries'} behind, oldest ${stream.lag.seconds} s`;
}

export const auditStreamsPage: Page = {
  title: 'Audit streams',
  async render(main) {
    const status = notice();
    const once = h('div');
    const panel = h('div');
    const list = h('div');

    const name = h('input', { name: 'name', required: true, maxlength: 200, autocomplete: 'off' });
    const preset = h('select', { name: 'preset' }, Object.entries(PRESETS).map(([value, label]) => h('option', { value }, label)));
    const url = h('input', { name: 'url', type: 'url', required: true, placeholder: 'https://siem.example.com/audit', autocomplete: 'url' });
    const token = h('input', { name: 'token', type: 'password', maxlength: 512, autocomplete: 'off' });
    const start = h('select', { name: 'start' }, h('option', { value: 'earliest' }, 'The whole audit log'), h('option', { value: 'latest' }, 'From now on'));
    const tokenField = field('Destination token', token, 'Splunk: the HEC token. Datadog: the API key. Stored encrypted, never shown again.');
    const showToken = () => {
      tokenField.hidden = preset.value === 'ndjson';
      token.required = preset.value !== 'ndjson';
    };
    preset.addEventListener('change', showToken);
    showToken();

    const run = refreshingActions(status, () => refresh()); // refresh is declared below
    const path = (stream: AuditStream) => ({ path: { streamId: stream.id } });

    const form = h('form', {
      'aria-label': 'Create an audit stream',
      onsubmit: (event: Event) => {
        event.preventDefault();
        return run(async () => {
          const chosen = preset.value as Preset;
          const created = await ok(api.POST('/api/employer/audit-streams', {
            body: { name: name.value, preset: chosen, url: url.value, start: start.value as 'earliest' | 'latest', ...(chosen === 'ndjson' ? {} : { token: token.value }) },
          }));
          once.replaceChildren(created.signingSecret ? secretPanel(`Signing secret of ${created.name}`, created.signingSecret, SECRET_WARNING) : '');
          form.reset();
          showToken();
          return `${created.name} created: its entries are on their way.`;
        });
      },
    },
      h('h2', {}, 'Stream the audit log'),
      field('Name', name),
      field('Format', preset),
      field('HTTPS URL', url, 'For Splunk and Datadog the intake\'s address (https://host:port); the documented path is added.'),
      tokenField,
      field('Start with', start),
      h('button', { type: 'submit' }, 'Create stream'),
    );

    const setStatus = (stream: AuditStream, next: 'active' | 'paused') => run(async () => {
      await ok(api.PATCH('/api/employer/audit-streams/{streamId}', { params: path(stream), body: { status: next } }));
      return `${stream.name} ${next === 'active' ? 'resumed' : 'paused'}.`;
    });
    const remove = (stream: AuditStream) => run(async () => {
      if (!confirm(`Delete the audit stream ${stream.name}? Nothing more is sent to ${stream.url}.`)) return;
      await ok(api.DELETE('/api/employer/audit-streams/{streamId}', { params: path(stream) }));
      return `${stream.name} deleted.`;
    });
    const openToken = (stream: AuditStream) => {
      const replacement = h('input', { name: 'token', type: 'password', required: true, maxlength: 512, autocomplete: 'off' });
      const tokenForm = h('form', {
        'aria-label': `Replace the token of ${stream.name}`,
        onsubmit: (event: Event) => {
          event.preventDefault();
          return run(async () => {
            await ok(api.PATCH('/api/employer/audit-streams/{streamId}', { params: path(stream), body: { token: replacement.value } }));
            panel.replaceChildren();
            return `${stream.name} sends with the new token from its next batch.`;
          });
        },
      },
        h('h2', {}, `Replace the token of ${stream.name}`),
        field('New token', replacement),
        h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Replace token'), h('button', { type: 'button', onclick: () => panel.replaceChildren() }, 'Cancel')),
      );
      panel.replaceChildren(tokenForm);
      replacement.focus();
    };

    const refresh = async () => {
      const { streams } = await ok(api.GET('/api/employer/audit-streams'));
      list.replaceChildren(table('Audit streams of this employer', ['Name', 'Destination', 'Status', 'Lag', 'Delivered', 'Last failure', 'Actions'], streams.map((stream) => [
        h('span', {}, stream.name),
        h('span', {}, PRESETS[stream.preset], h('br'), h('code', {}, stream.url)),
        h('span', { class: `status ${stream.status}` }, stream.status),
        h('span', { 'data-testid': 'lag' }, lagText(stream)),
        h('span', {}, `${stream.delivery.deliveredEntries} entries`, h('br'), formatDate(stream.delivery.lastDeliveredAt)),
        h('span', {}, stream.delivery.lastError
          ? [`${stream.delivery.lastError} (${formatDate(stream.delivery.lastFailureAt)})`, h('br'), `next try ${formatDate(stream.delivery.nextAttemptAt)}`]
          : '—'),
        h('span', { class: 'actions' },
          stream.status === 'active'
            ? h('button', { type: 'button', onclick: () => setStatus(stream, 'paused'), 'aria-label': `Pause ${stream.name}` }, 'Pause')
            : h('button', { type: 'button', onclick: () => setStatus(stream, 'active'), 'aria-label': `Resume ${stream.name}` }, 'Resume'),
          stream.preset === 'ndjson' ? null : h('button', { type: 'button', onclick: () => openToken(stream), 'aria-label': `Replace the token of ${stream.name}` }, 'Replace token'),
          h('button', { type: 'button', onclick: () => void refresh(), 'aria-label': `Refresh ${stream.name}` }, 'Refresh'),
          h('button', { type: 'button', class: 'danger', onclick: () => remove(stream), 'aria-label': `Delete ${stream.name}` }, 'Delete')),
      ])));
    };

    await refresh();
    main.append(
      h('p', {}, 'Each stream sends every audit entry, in audit chain order and with its chain hash, to your destination in batches; a batch that is not acknowledged is sent again, whole.'),
      form, status.element, once, panel, list,
    );
  },
};
