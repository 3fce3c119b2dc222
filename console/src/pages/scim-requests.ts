// The SCIM request log, a section of the single sign-on page: the IdP's requests of the last 30 days,
// newest first (errors only, if asked), with their status, scimType and detail, paged by cursor.
import type { components } from '../../generated/api.d.ts';
import { api, ok } from '../api.ts';
import { formatDate, h, notice, table } from '../dom.ts';

type ScimRequest = components['schemas']['ScimRequest'];

export async function scimRequestsSection(): Promise<HTMLElement> {
  const status = notice();
  const results = h('div');
  const more = h('div');
  const errorsOnly = h('input', { type: 'checkbox', id: 'scim-requests-errors' });
  let requests: ScimRequest[] = [];

  const load = async (cursor: string | null) => {
    status.clear();
    const query: { status?: '4xx'; cursor?: string } = {};
    if (errorsOnly.checked) query.status = '4xx';
    if (cursor) query.cursor = cursor;
    try {
      const page = await ok(api.GET('/api/employer/scim-requests', { params: { query } }));
      requests = cursor ? [...requests, ...page.requests] : page.requests;
      results.replaceChildren(table('SCIM requests', ['When', 'Request', 'Status', 'Error', 'Duration'], requests.map((entry) => [
          h('span', {}, formatDate(entry.receivedAt)),
          h('code', {}, `${entry.method} ${entry.path}`),
          h('span', { class: entry.status >= 400 ? 'status inactive' : 'status active' }, String(entry.status)),
          h('span', {}, entry.scimType || entry.detail ? `${entry.scimType ?? ''}${entry.scimType && entry.detail ? ': ' : ''}${entry.detail ?? ''}` : '—'),
          h('span', {}, `${entry.durationMs} ms`),
      ])));
      more.replaceChildren(page.nextCursor ? h('button', { type: 'button', onclick: () => load(page.nextCursor) }, 'Show more SCIM requests') : '');
    } catch (error) {
      status.fail(error);
    }
  };

  errorsOnly.addEventListener('change', () => void load(null));
  await load(null);
  return h('section', { 'aria-label': 'SCIM request log' },
    h('h2', {}, 'SCIM request log'),
    h('p', {}, 'What your identity provider asked of SCIM in the last 30 days. Filter values and bodies are not kept.'),
    h('div', { class: 'check' }, errorsOnly, h('label', { for: errorsOnly.id }, 'Errors only')),
    h('button', { type: 'button', onclick: () => load(null) }, 'Refresh SCIM requests'),
    status.element, results, more,
  );
}
