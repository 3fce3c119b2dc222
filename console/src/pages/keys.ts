// API keys: create (scopes with their purpose, CIDR allowlist checked as typed, optional expiry), the
// raw key shown once, and the list with suspend / resume / revoke.
import type { components } from '../../generated/api.d.ts';
import { api, ok } from '../api.ts';
import { field, formatDate, h, notice, secretPanel, setFieldError, table } from '../dom.ts';
import type { Page } from '../main.ts';

type ApiKey = components['schemas']['ApiKey'];
type Scope = ApiKey['scopes'][number];

/** What each scope lets a key do (SPEC 5.3), shown beside its checkbox. */
const SCOPE_PURPOSE: Record<Scope, string> = {
  'cohort:read': 'Read cohorts and patients',
  'cohort:write': 'Upload patient cohorts',
  'export:read': 'Read and download exports',
  'export:create': 'Start CSV exports',
  'simulate:run': 'Run simulations',
  'authorization:read': 'Read authorizations',
  'authorization:write': 'Change authorizations',
  'webhook:manage': 'Manage webhook subscriptions',
  'sso:manage': 'Manage SSO and SCIM settings',
  'fhir:read': 'Read FHIR resources',
  'fhir:write': 'Write FHIR resources',
};

const IPV4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;

/** Checks one allowlist entry as the service will (an address, or address/prefix); null when fine. */
export function cidrProblem(entry: string): string | null {
  const [address = '', prefix, extra] = entry.split('/');
  if (extra !== undefined) return `${entry}: more than one "/"`;
  const v4 = IPV4.test(address);
  const v6 = !v4 && address.includes(':') && /^[0-9a-fA-F:.]+$/.test(address) && (address.match(/::/g) ?? []).length <= 1;
  if (!v4 && !v6) return `${entry}: not an IPv4 or IPv6 address`;
  if (prefix !== undefined && !(/^\d{1,3}$/.test(prefix) && Number(prefix) <= (v4 ? 32 : 128))) return `${entry}: the prefix must be 0 to ${v4 ? 32 : 128}`;
  return null;
}

export const keysPage: Page = {
  title: 'API keys',
  async render(main) {
    const status = notice();
    const list = h('div');
    const created = h('div');
    type KeyPage = { keys: ApiKey[]; nextCursor: string | null };
    const firstPage = await ok(api.GET('/api/employer/api-keys', { params: { query: {} } }));
    const { availableScopes } = firstPage;

    const name = h('input', { name: 'name', required: true, maxlength: 100, autocomplete: 'off' });
    const cidrs = h('textarea', { name: 'allowedIpCidrs', rows: 2, placeholder: '203.0.113.0/24' });
    const expires = h('input', { name: 'expiresAt', type: 'datetime-local' });
    const scopeBoxes = availableScopes.map((scope) => h('input', { type: 'checkbox', name: 'scopes', value: scope, id: `scope-${scope.replace(':', '-')}` }));
    const cidrList = () => cidrs.value.split(/[\s,]+/).filter(Boolean);
    const checkCidrs = () => {
      const problems = cidrList().map(cidrProblem).filter((problem): problem is string => problem !== null);
      setFieldError(cidrs, problems.length > 0 ? problems.join('; ') : null);
      return problems.length === 0;
    };
    cidrs.addEventListener('input', checkCidrs);

    const form = h('form', {
      'aria-label': 'Create an API key',
      onsubmit: async (event: Event) => {
        event.preventDefault();
        status.clear();
        const scopes = scopeBoxes.filter((box) => box.checked).map((box) => box.value as Scope);
        if (scopes.length === 0) return status.fail('Choose at least one scope.');
        if (!checkCidrs()) return status.fail('Correct the IP allowlist first.');
        try {
          const key = await ok(api.POST('/api/employer/api-keys', {
            body: { name: name.value, scopes, allowedIpCidrs: cidrList(), ...(expires.value ? { expiresAt: new Date(expires.value).toISOString() } : {}) },
          }));
          created.replaceChildren(secretPanel(`New key "${key.name}"`, key.rawKey, 'Copy this key now and keep it secret. It is shown only this once: the service stores only its hash.'));
          form.reset();
          await refresh();
        } catch (error) {
          status.fail(error);
        }
      },
    },
      h('h2', {}, 'Create a key'),
      field('Name', name),
      h('fieldset', {}, h('legend', {}, 'Scopes'),
        scopeBoxes.map((box) => h('div', { class: 'check' }, box, h('label', { for: box.id }, h('code', {}, box.value), ` — ${SCOPE_PURPOSE[box.value as Scope]}`)))),
      field('IP allowlist (optional)', cidrs, 'CIDRs or addresses, separated by spaces, commas or lines. Empty: any address.'),
      field('Expires (optional)', expires),
      h('button', { type: 'submit' }, 'Create key'),
    );

    const act = async (key: ApiKey, action: 'suspend' | 'resume' | 'revoke') => {
      if (!confirm(`${action[0]!.toUpperCase()}${action.slice(1)} the key "${key.name}"?${action === 'revoke' ? ' This cannot be undone.' : ''}`)) return;
      try {
        const params = { path: { keyId: key.id } };
        if (action === 'revoke') await ok(api.DELETE('/api/employer/api-keys/{keyId}', { params }));
        else await ok(api.PATCH('/api/employer/api-keys/{keyId}', { params, body: { status: action === 'suspend' ? 'inactive' : 'active' } }));
        await refresh();
        status.ok(`Key "${key.name}": ${action === 'revoke' ? 'revoked' : action === 'suspend' ? 'suspended' : 'resumed'}.`);
      } catch (error) {
        status.fail(error);
      }
    };

    /** Shows every key, reading page after page; the first page may be one already read. */
    const refresh = async (first?: KeyPage) => {
      const keys: ApiKey[] = [];
      let page: KeyPage = first ?? (await ok(api.GET('/api/employer/api-keys', { params: { query: {} } })));
      keys.push(...page.keys);
      while (page.nextCursor) {
        page = await ok(api.GET('/api/employer/api-keys', { params: { query: { cursor: page.nextCursor } } }));
        keys.push(...page.keys);
      }
      list.replaceChildren(table('API keys of this employer', ['Name', 'Status', 'Scopes', 'Allowlist', 'Expires', 'Last use', 'Requests', 'Actions'], keys.map((key) => [
        h('span', {}, key.name, h('br'), h('small', {}, `mt_live_${key.keyPrefix}…`)),
        h('span', { class: `status ${key.status}` }, key.status),
        h('span', {}, key.scopes.join(', ')),
        h('span', {}, key.allowedIpCidrs.join(', ') || 'any'),
        h('span', {}, formatDate(key.expiresAt)),
        h('span', {}, key.lastUsedAt ? `${formatDate(key.lastUsedAt)} from ${key.lastUsedIp ?? '?'}` : 'never'),
        h('span', {}, key.requestCount),
        h('span', { class: 'actions' }, key.status === 'revoked' ? '' : [
          key.status === 'inactive'
            ? h('button', { type: 'button', onclick: () => act(key, 'resume'), 'aria-label': `Resume ${key.name}` }, 'Resume')
            : h('button', { type: 'button', onclick: () => act(key, 'suspend'), 'aria-label': `Suspend ${key.name}` }, 'Suspend'),
          h('button', { type: 'button', class: 'danger', onclick: () => act(key, 'revoke'), 'aria-label': `Revoke ${key.name}` }, 'Revoke'),
        ]),
      ])));
    };

    main.append(form, status.element, created, list);
    await refresh(firstPage);
  },
};
