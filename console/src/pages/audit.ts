// The audit log: filters (action, actor, target, time range) and cursor paging.
import { callJson } from '../api.ts';
import { field, formatDate, h, notice, table } from '../dom.ts';
import type { Page } from '../main.ts';
import { requireRoute } from './pending.ts';

type AuditEvent = { id?: string; action: string; actorId?: string | null; actorType?: string | null; targetId?: string | null; targetType?: string | null; occurredAt?: string; createdAt?: string };

export const auditPage: Page = {
  title: 'Audit log',
  async render(main) {
    if (!(await requireRoute(main, '/api/employer/audit-events', 'The audit log'))) return;
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
    let events: AuditEvent[] = [];

    const load = async (cursor: string | null) => {
      status.clear();
      const query = new URLSearchParams();
      for (const [name, input] of Object.entries(inputs)) {
        if (!input.value.trim()) continue;
        query.set(name, input.type === 'datetime-local' ? new Date(input.value).toISOString() : input.value.trim());
      }
      if (cursor) query.set('cursor', cursor);
      try {
        const page = await callJson<{ events?: AuditEvent[]; auditEvents?: AuditEvent[]; nextCursor: string | null }>('GET', `/api/employer/audit-events?${query}`);
        events = cursor ? [...events, ...(page.events ?? page.auditEvents ?? [])] : (page.events ?? page.auditEvents ?? []);
        results.replaceChildren(table('Audit events', ['When', 'Action', 'Actor', 'Target'], events.map((event) => [
          h('span', {}, formatDate(event.occurredAt ?? event.createdAt)),
          h('code', {}, event.action),
          h('span', {}, [event.actorType, event.actorId].filter(Boolean).join(' ') || '—'),
          h('span', {}, [event.targetType, event.targetId].filter(Boolean).join(' ') || '—'),
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
