// The audit log: filters (action, actor, target, time range) and cursor paging; and its export (NDJSON or
// CSV, by time range and action) as a download link.
import { api, ok } from '../api.ts';
import { field, formatDate, h, notice, table } from '../dom.ts';
import type { components } from '../../generated/api.d.ts';
import type { Page } from '../main.ts';

type AuditEntry = components['schemas']['AuditEntry'];

export const auditPage: Page = {
  title: 'Audit log',
  async render(main) {
    const status = notice();
    const results = h('div');
    const more = h('div');
    const inputs = {
      action: h('input', { name: 'action', placeholder: 'api_key.create' }),
      actorId: h('input', { name: 'actorId' }),
      targetId: h('input', { name: 'targetId' }),
      from: h('input', { name: 'from', type: 'datetime-local' }),
      to: h('input', { name: 'to', type: 'datetime-local' }),
    };
    let entries: AuditEntry[] = [];

    const load = async (cursor: string | null) => {
      status.clear();
      const query: Record<string, string> = {};
      for (const [name, input] of Object.entries(inputs)) {
        if (!input.value.trim()) continue;
        query[name] = input.type === 'datetime-local' ? new Date(input.value).toISOString() : input.value.trim();
      }
      if (cursor) query.cursor = cursor;
      try {
        const page = await ok(api.GET('/api/employer/audit-events', { params: { query } }));
        entries = cursor ? [...entries, ...page.entries] : page.entries;
        results.replaceChildren(table('Audit events', ['When', 'Action', 'Actor', 'Target', 'Address'], entries.map((entry) => [
          h('span', {}, formatDate(entry.occurredAt)),
          h('code', {}, entry.action),
          h('span', {}, `${entry.actor.type} ${entry.actor.id}`),
          h('span', {}, entry.target ? `${entry.target.type} ${entry.target.id}` : '—'),
          h('span', { title: entry.userAgent ?? '' }, entry.ipAddress ?? '—'),
        ])));
        more.replaceChildren(page.nextCursor ? h('button', { type: 'button', onclick: () => load(page.nextCursor) }, 'Show more') : '');
      } catch (error) {
        status.fail(error);
      }
    };

    const exportInputs = {
      format: h('select', { name: 'format' }, h('option', { value: 'csv' }, 'CSV'), h('option', { value: 'ndjson' }, 'NDJSON (one JSON entry a line)')),
      action: h('input', { name: 'action', placeholder: 'scim.' }),
      from: h('input', { name: 'from', type: 'datetime-local' }),
      to: h('input', { name: 'to', type: 'datetime-local' }),
    };
    const exportLink = h('a', {}, 'Download the export');
    // The link follows the form: a plain GET with the session cookie, which the browser saves as it streams.
    const updateExportLink = () => {
      const query = new URLSearchParams({ format: exportInputs.format.value });
      const action = exportInputs.action.value.trim();
      if (action) query.set('action', action);
      for (const name of ['from', 'to'] as const) if (exportInputs[name].value) query.set(name, new Date(exportInputs[name].value).toISOString());
      exportLink.href = `/api/employer/audit-events/export?${query}`;
      exportLink.download = `audit-events.${exportInputs.format.value}`;
    };
    updateExportLink();

    main.append(
      h('form', { 'aria-label': 'Filter the audit log', onsubmit: (event: Event) => (event.preventDefault(), void load(null)) },
        h('div', { class: 'filters' },
          field('Action', inputs.action), field('Actor id', inputs.actorId), field('Target id', inputs.targetId), field('From', inputs.from), field('To', inputs.to)),
        h('button', { type: 'submit' }, 'Apply filters'),
      ),
      status.element, results, more,
      h('section', { 'aria-label': 'Export the audit log' },
        h('h2', {}, 'Export'),
        h('p', {}, 'Every entry in the range, oldest first, each with its audit chain hash (checked by scripts/verify-audit-chain.mjs).'),
        h('form', { 'aria-label': 'Audit export', oninput: updateExportLink, onchange: updateExportLink, onsubmit: (event: Event) => event.preventDefault() },
          h('div', { class: 'filters' },
            field('Format', exportInputs.format), field('Action', exportInputs.action, 'Exact, or a prefix ending in a dot'), field('From', exportInputs.from), field('To', exportInputs.to)),
          exportLink,
        ),
      ),
    );
    await load(null);
  },
};
