// SMART Backend Services clients: register one with a pasted JWK Set of public keys and its scopes, list
// them with their client ids (what the client puts in iss and sub), revoke.
import type { components } from '../../generated/api.d.ts';
import { api, ok } from '../api.ts';
import { field, formatDate, h, notice, setFieldError, table } from '../dom.ts';
import type { Page } from '../main.ts';

type SmartClient = components['schemas']['SmartClient'];
type ClientPage = { clients: SmartClient[]; nextCursor: string | null };

/** The pasted key set as the API takes it, or the reason it is not one. */
export function parseJwks(text: string): { jwks: { keys: Array<Record<string, string | boolean | string[]>> } } | { problem: string } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return { problem: 'Not JSON: paste the JWK Set, {"keys": [...]}.' };
  }
  const keys = (parsed as { keys?: unknown })?.keys;
  if (!Array.isArray(keys) || keys.length === 0) return { problem: 'A JWK Set has a non-empty "keys" array.' };
  if (keys.some((key) => typeof key === 'object' && key !== null && 'd' in key)) return { problem: 'This key set holds a private key ("d"): paste the public keys only.' };
  return { jwks: { keys } };
}

export const smartClientsPage: Page = {
  title: 'SMART clients',
  async render(main) {
    const status = notice();
    const list = h('div');
    const name = h('input', { name: 'name', required: true, maxlength: 100, autocomplete: 'off' });
    const jwks = h('textarea', { name: 'jwks', rows: 6, required: true, placeholder: '{"keys": [{"kty": "EC", "crv": "P-384", "kid": "...", "x": "...", "y": "..."}]}' });
    const scopes = h('input', { name: 'scopes', value: 'system/*.rs', required: true, autocomplete: 'off' });

    const form = h('form', {
      'aria-label': 'Register a SMART client',
      onsubmit: async (event: Event) => {
        event.preventDefault();
        status.clear();
        const keySet = parseJwks(jwks.value);
        setFieldError(jwks, 'problem' in keySet ? keySet.problem : null);
        if ('problem' in keySet) return status.fail('Correct the key set first.');
        try {
          const client = await ok(api.POST('/api/employer/smart-clients', { body: { name: name.value, jwks: keySet.jwks, scopes: scopes.value.split(/\s+/).filter(Boolean) } }));
          status.ok(`Client "${client.name}" registered: its client id is ${client.clientId}.`);
          form.reset();
          await refresh();
        } catch (error) {
          status.fail(error);
        }
      },
    },
      h('h2', {}, 'Register a client'),
      h('p', {}, 'A backend service (a Bulk Data tool, an analytics job) signs its token requests with its private key; register its public keys here.'),
      field('Name', name),
      field('JWK Set (public keys)', jwks, 'RS384 or ES384 keys, each with a kid. Never paste a private key.'),
      field('Scopes', scopes, 'SMART system scopes separated by spaces, e.g. system/*.rs or system/Patient.rs system/Observation.rs.'),
      h('button', { type: 'submit' }, 'Register client'),
    );

    const revoke = async (client: SmartClient) => {
      if (!confirm(`Revoke the SMART client "${client.name}"? Its access tokens stop working at once. This cannot be undone.`)) return;
      try {
        await ok(api.DELETE('/api/employer/smart-clients/{clientId}', { params: { path: { clientId: client.clientId } } }));
        await refresh();
        status.ok(`Client "${client.name}": revoked.`);
      } catch (error) {
        status.fail(error);
      }
    };

    const refresh = async () => {
      const clients: SmartClient[] = [];
      let page: ClientPage = await ok(api.GET('/api/employer/smart-clients', { params: { query: {} } }));
      clients.push(...page.clients);
      while (page.nextCursor) {
        page = await ok(api.GET('/api/employer/smart-clients', { params: { query: { cursor: page.nextCursor } } }));
        clients.push(...page.clients);
      }
      list.replaceChildren(table('SMART clients of this employer', ['Name', 'Client id', 'Status', 'Scopes', 'Keys', 'Registered', 'Actions'], clients.map((client) => [
        h('span', {}, client.name),
        h('code', {}, client.clientId),
        h('span', { class: `status ${client.status}` }, client.status),
        h('span', {}, client.scopes.join(' ')),
        h('span', {}, client.jwks ? client.jwks.keys.map((key) => String(key.kid)).join(', ') : client.jwksUrl ?? ''),
        h('span', {}, formatDate(client.registeredAt)),
        h('span', { class: 'actions' }, client.status === 'revoked' ? '' : h('button', { type: 'button', class: 'danger', onclick: () => revoke(client), 'aria-label': `Revoke ${client.name}` }, 'Revoke')),
      ])));
    };

    main.append(form, status.element, list);
    await refresh();
  },
};
