// The audit log: filters (action, actor, target, time range) and cursor paging.
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
        results.replaceChildren(table('Audit events', ['When', 'Action', 'Actor', 'Target'], entries.map((entry) => [
          h('span', {}, formatDate(entry.occurredAt)),
          h('code', {}, entry.action),
          h('span', {}, `${entry.actor.type} ${entry.actor.id}`),
          h('span', {}, entry.target ? `${entry.target.type} ${entry.target.id}` : '—'),
        ])));
        more.replaceChildren(page.nextCursor ? h('button', { type: 'button', onclick: () => load(page.nextCursor) }, 'Show more') : '');
      } catch (error) {
        status.fail(error);
      }
    };

    main.append(
      h('form', { 'aria-label': 'Filter the audit log', onsubmit: (event: Event) => (event.preventDefault(), void load(null)) },
        h('div', { class: 'filters' },
          field('Action', inputs.action), field('Actor id', inputs.actorId), field('Target id', inputs.targetId), field('From', inputs.from), field('To', inputs.to)),
        h('button', { type: 'submit' }, 'Apply filters'),
      ),
      status.element, results, more,
    );
    await load(null);
  },
};
