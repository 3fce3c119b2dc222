// E-mail domains, a section of the single sign-on page: claim a domain, publish the TXT record it
// names, verify it; a verified domain's new addresses can be provisioned by this employer only.
import type { components } from '../../generated/api.d.ts';
import { api, ok } from '../api.ts';
import { field, formatDate, h, notice, table } from '../dom.ts';

type Claim = components['schemas']['EmailDomainClaim'];

export async function emailDomainsSection(): Promise<HTMLElement> {
  const status = notice();
  const list = h('div');
  const domain = h('input', { name: 'domain', required: true, maxlength: 253, autocomplete: 'off', placeholder: 'example.com' });

  const act = (done: string, call: () => Promise<unknown>) => status.attempt(async () => {
    await call();
    await refresh();
  }, done);
  const params = (claim: Claim) => ({ params: { path: { domain: claim.domain } } });
  const verify = (claim: Claim) => act(`${claim.domain} is verified.`, () => ok(api.POST('/api/employer/email-domains/{domain}/verify', params(claim))));
  const withdraw = (claim: Claim) =>
    confirm(`Withdraw the claim on ${claim.domain}? Other employers can then take up new addresses in it.`) &&
    act(`The claim on ${claim.domain} is withdrawn.`, () => ok(api.DELETE('/api/employer/email-domains/{domain}', params(claim))));

  const refresh = async () => {
    const claims: Claim[] = [];
    let page = await ok(api.GET('/api/employer/email-domains', { params: { query: {} } }));
    claims.push(...page.domains);
    while (page.nextCursor) {
      page = await ok(api.GET('/api/employer/email-domains', { params: { query: { cursor: page.nextCursor } } }));
      claims.push(...page.domains);
    }
    list.replaceChildren(table('E-mail domains of this employer', ['Domain', 'Status', 'DNS TXT record', 'Actions'], claims.map((claim) => [
      h('span', {}, claim.domain),
      h('span', { class: `status ${claim.status}` }, claim.status === 'verified' ? `verified ${formatDate(claim.verifiedAt)}` : 'pending'),
      h('span', {}, h('code', {}, claim.txtRecord.name), h('br'), h('code', {}, claim.txtRecord.value)),
      h('span', { class: 'actions' },
        claim.status === 'pending' ? h('button', { type: 'button', onclick: () => verify(claim), 'aria-label': `Verify ${claim.domain}` }, 'Verify') : null,
        h('button', { type: 'button', class: 'danger', onclick: () => withdraw(claim), 'aria-label': `Withdraw ${claim.domain}` }, 'Withdraw')),
    ])));
  };

  const form = h('form', {
    'aria-label': 'Claim an e-mail domain',
    onsubmit: (event: Event) => {
      event.preventDefault();
      void act('Domain claimed: publish its TXT record, then verify it.', async () => {
        await ok(api.POST('/api/employer/email-domains', { body: { domain: domain.value } }));
        form.reset();
      });
    },
  },
    field('Domain', domain, 'Publish the TXT record shown below in the domain\'s DNS, then verify.'),
    h('button', { type: 'submit' }, 'Claim domain'),
  );

  await refresh();
  return h('section', { 'aria-label': 'E-mail domains' },
    h('h2', {}, 'E-mail domains'),
    h('p', {}, 'Once a domain is verified, new users and patients with an address in it can be provisioned by this employer only. Addresses other employers already hold stay theirs.'),
    form, status.element, list);
}
