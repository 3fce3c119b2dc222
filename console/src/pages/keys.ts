// API keys: create (scopes with their purpose, CIDR allowlist checked as typed, optional expiry), the
// raw key shown once, and the list with edit (settings in place), roll (a new key, the old one working
// for an overlap), suspend / resume / revoke.
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
  'audit:read': 'Read and export the audit log',
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
    // The edit or roll form of one key, opened from its row.
    const panel = h('div');
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

    const closePanel = () => panel.replaceChildren();

    const openRoll = (key: ApiKey) => {
      const hours = h('input', { name: 'overlapHours', type: 'number', min: 0, max: 168, step: 'any', value: 24, required: true });
      const rollForm = h('form', {
        'aria-label': `Roll ${key.name}`,
        onsubmit: async (event: Event) => {
          event.preventDefault();
          status.clear();
          try {
            const rolled = await ok(api.POST('/api/employer/api-keys/{keyId}/roll', {
              params: { path: { keyId: key.id } },
              body: { overlapSeconds: Math.round(Number(hours.value) * 3600) },
            }));
            created.replaceChildren(secretPanel(`New key replacing "${key.name}"`, rolled.rawKey,
              'Copy this key now and keep it secret: it is shown only this once. Deploy it before the old key stops working.'));
            closePanel();
            await refresh();
          } catch (error) {
            status.fail(error);
          }
        },
      },
        h('h2', {}, `Roll "${key.name}"`),
        h('p', {}, 'A new key with the same name, scopes, allowlist, expiry and rate limit. The old key keeps working for the overlap, then is revoked.'),
        field('Overlap (hours)', hours, '0 revokes the old key at once; at most 168 (7 days).'),
        h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Roll key'), h('button', { type: 'button', onclick: closePanel }, 'Cancel')),
      );
      panel.replaceChildren(rollForm);
      hours.focus();
    };

    const openEdit = (key: ApiKey) => {
      const editName = h('input', { name: 'name', required: true, maxlength: 100, value: key.name, autocomplete: 'off' });
      const editCidrs = h('textarea', { name: 'allowedIpCidrs', rows: 2 });
      editCidrs.value = key.allowedIpCidrs.join('\n');
      const toLocalInput = (iso: string) => new Date(new Date(iso).getTime() - new Date(iso).getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
      const editExpires = h('input', { name: 'expiresAt', type: 'datetime-local', value: key.expiresAt ? toLocalInput(key.expiresAt) : '' });
      const editLimit = h('input', { name: 'rateLimitPerMinute', type: 'number', min: 1, value: key.rateLimitPerMinute ?? '' });
      const editScopes = availableScopes.map((scope) => h('input', {
        type: 'checkbox', name: 'editScopes', value: scope, id: `edit-scope-${scope.replace(':', '-')}`, checked: key.scopes.includes(scope),
      }));
      const editCidrList = () => editCidrs.value.split(/[\s,]+/).filter(Boolean);
      const editForm = h('form', {
        'aria-label': `Edit ${key.name}`,
        onsubmit: async (event: Event) => {
          event.preventDefault();
          status.clear();
          const scopes = editScopes.filter((box) => box.checked).map((box) => box.value as Scope);
          if (scopes.length === 0) return status.fail('Choose at least one scope.');
          const problems = editCidrList().map(cidrProblem).filter((problem): problem is string => problem !== null);
          setFieldError(editCidrs, problems.length > 0 ? problems.join('; ') : null);
          if (problems.length > 0) return status.fail('Correct the IP allowlist first.');
          try {
            await ok(api.PATCH('/api/employer/api-keys/{keyId}', {
              params: { path: { keyId: key.id } },
              body: {
                name: editName.value,
                scopes,
                allowedIpCidrs: editCidrList(),
                expiresAt: editExpires.value ? new Date(editExpires.value).toISOString() : null,
                rateLimitPerMinute: editLimit.value ? Number(editLimit.value) : null,
              },
            }));
            closePanel();
            await refresh();
            status.ok(`Key "${editName.value}" changed; every server applies it within a second.`);
          } catch (error) {
            status.fail(error);
          }
        },
      },
        h('h2', {}, `Edit "${key.name}"`),
        field('Name', editName),
        h('fieldset', {}, h('legend', {}, 'Scopes'),
          editScopes.map((box) => h('div', { class: 'check' }, box, h('label', { for: box.id }, h('code', {}, box.value), ` — ${SCOPE_PURPOSE[box.value as Scope]}`)))),
        field('IP allowlist', editCidrs, 'Empty: any address.'),
        field('Expires', editExpires, 'Empty: never.'),
        field('Rate limit per minute', editLimit, 'Empty: the service default.'),
        h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Save changes'), h('button', { type: 'button', onclick: closePanel }, 'Cancel')),
      );
      panel.replaceChildren(editForm);
      editName.focus();
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
        h('span', { class: `status ${key.status}` }, key.status,
          key.rolledInto && key.revokesAt ? h('small', {}, h('br'), `rolled: revoked ${formatDate(key.revokesAt)}`) : null),
        h('span', {}, key.scopes.join(', ')),
        h('span', {}, key.allowedIpCidrs.join(', ') || 'any'),
        h('span', {}, formatDate(key.expiresAt)),
        h('span', {}, key.lastUsedAt ? `${formatDate(key.lastUsedAt)} from ${key.lastUsedIp ?? '?'}` : 'never'),
        h('span', {}, key.requestCount),
        h('span', { class: 'actions' }, key.status === 'revoked' ? '' : [
          h('button', { type: 'button', onclick: () => openEdit(key), 'aria-label': `Edit ${key.name}` }, 'Edit'),
          key.rolledInto ? null : h('button', { type: 'button', onclick: () => openRoll(key), 'aria-label': `Roll ${key.name}` }, 'Roll'),
          key.status === 'inactive'
            ? h('button', { type: 'button', onclick: () => act(key, 'resume'), 'aria-label': `Resume ${key.name}` }, 'Resume')
            : h('button', { type: 'button', onclick: () => act(key, 'suspend'), 'aria-label': `Suspend ${key.name}` }, 'Suspend'),
          h('button', { type: 'button', class: 'danger', onclick: () => act(key, 'revoke'), 'aria-label': `Revoke ${key.name}` }, 'Revoke'),
        ]),
      ])));
    };

    main.append(form, status.element, created, panel, list);
    await refresh(firstPage);
  },
};
