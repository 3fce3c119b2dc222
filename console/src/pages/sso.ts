// Single sign-on: SAML settings (IdP metadata URL, or entry point, issuer and certificate), what the
// IdP administrator needs (SP metadata, ACS URL), a test sign-in link; SCIM on/off and its token,
// shown once, with rotation and its overlap (scim-token.ts); a SAML trust change an API key proposed, to
// confirm or discard; the IdP groups mapped to the administrator role (admin-role-mapping.ts); the
// employer's e-mail domains (email-domains.ts); SAML certificates and SP keys (saml-certificates.ts);
// the SCIM request log (scim-requests.ts).
import type { components } from '../../generated/api.d.ts';
import { api, ok } from '../api.ts';
import { field, formatDate, h, notice, secretPanel } from '../dom.ts';
import type { Page, Session } from '../main.ts';
import { adminRoleMappingSection } from './admin-role-mapping.ts';
import { emailDomainsSection } from './email-domains.ts';
import { samlCertificatesSection } from './saml-certificates.ts';
import { scimRequestsSection } from './scim-requests.ts';
import { SCIM_TOKEN_WARNING, scimTokenControls } from './scim-token.ts';

type SsoUpdate = NonNullable<components['schemas']['SsoConfigurationUpdated']>;
type PendingTrustChange = NonNullable<components['schemas']['SsoConfiguration']['pendingTrustChange']>;
type SsoBody = { samlEnabled?: boolean; samlMetadataUrl?: string; samlEntryPoint?: string; samlIssuer?: string; samlCertificate?: string; scimEnabled?: boolean };

export const ssoPage: Page = {
  title: 'Single sign-on',
  async render(main, session: Session) {
    const status = notice();
    const once = h('div');
    const body = h('div');

    const save = (update: SsoBody, done: string) => status.attempt(async () => {
      const result: SsoUpdate = await ok(api.POST('/api/employer/sso', { body: update as never }));
      await refresh();
      if (result.scimBearerToken) once.replaceChildren(secretPanel('SCIM bearer token', result.scimBearerToken, SCIM_TOKEN_WARNING));
    }, done);

    const refresh = async () => {
      const [sso, scimToken] = await Promise.all([ok(api.GET('/api/employer/sso')), ok(api.GET('/api/employer/sso/scim-token'))]);
      const metadataUrl = h('input', { name: 'samlMetadataUrl', type: 'url', value: sso.samlMetadataUrl ?? '' });
      const entryPoint = h('input', { name: 'samlEntryPoint', type: 'url', value: sso.samlEntryPoint ?? '' });
      const issuer = h('input', { name: 'samlIssuer', value: sso.samlIssuer ?? '' });
      const certificate = h('textarea', { name: 'samlCertificate', rows: 4 });
      certificate.value = sso.samlCertificate ?? '';
      const enabled = h('input', { type: 'checkbox', id: 'saml-enabled', ...(sso.samlEnabled ? { checked: true } : {}) });
      const copyAcs = h('span', { role: 'status', 'aria-live': 'polite' });

      const saml = h('form', {
        'aria-label': 'SAML settings',
        onsubmit: (event: Event) => {
          event.preventDefault();
          const update: SsoBody = { samlEnabled: enabled.checked };
          if (metadataUrl.value) update.samlMetadataUrl = metadataUrl.value;
          else Object.assign(update, { samlEntryPoint: entryPoint.value || undefined, samlIssuer: issuer.value || undefined, samlCertificate: certificate.value || undefined });
          void save(update, 'SAML settings saved.');
        },
      },
        h('h2', {}, 'SAML'),
        field('IdP metadata URL', metadataUrl, 'When given, the entry point, issuer and certificate are read from it.'),
        field('IdP entry point (SSO URL)', entryPoint),
        field('IdP issuer (entity id)', issuer),
        field('IdP signing certificate (PEM)', certificate),
        h('div', { class: 'check' }, enabled, h('label', { for: enabled.id }, 'SAML sign-in enabled')),
        h('button', { type: 'submit' }, 'Save SAML settings'),
        sso.samlCertificates.length > 0
          ? h('ul', {}, sso.samlCertificates.map((cert) => h('li', {}, `${cert.subject}, valid until ${formatDate(cert.validTo)}`)))
          : null,
      );

      const forIdp = h('section', { 'aria-label': 'For your identity provider' },
        h('h2', {}, 'For your identity provider'),
        h('dl', {},
          h('dt', {}, 'SP entity id'), h('dd', {}, h('code', {}, sso.spEntityId)),
          h('dt', {}, 'ACS URL'), h('dd', {}, h('code', {}, sso.acsUrl), ' ',
            h('button', { type: 'button', onclick: () => navigator.clipboard.writeText(sso.acsUrl).then(() => (copyAcs.textContent = 'Copied.'), () => (copyAcs.textContent = 'Copy failed.')) }, 'Copy ACS URL'), copyAcs),
          h('dt', {}, 'SCIM base URL'), h('dd', {}, h('code', {}, sso.scimBaseUrl)),
        ),
        h('p', {},
          h('a', { href: sso.spMetadataUrl, download: 'sp-metadata.xml' }, 'Download SP metadata'), ' · ',
          h('a', { href: `/api/auth/saml/start/${encodeURIComponent(session.employerId)}?returnTo=${encodeURIComponent('/#/sso')}` }, 'Test sign-in with SAML'),
        ),
      );

      const scim = h('section', { 'aria-label': 'SCIM provisioning' },
        h('h2', {}, 'SCIM provisioning'),
        h('p', { 'data-testid': 'scim-state' }, sso.scimEnabled
          ? `SCIM is on. Token ${sso.scimTokenExists ? `issued ${formatDate(sso.scimTokenRotatedAt)}` : 'not issued'}.`
          : 'SCIM is off.'),
        sso.scimEnabled
          ? [
            ...scimTokenControls(scimToken, { status, once, changed: refresh }),
            h('button', { type: 'button', class: 'danger', onclick: () => confirm('Turn SCIM off? Its token is revoked.') && save({ scimEnabled: false }, 'SCIM turned off.') }, 'Turn SCIM off'),
          ]
          : h('button', { type: 'button', onclick: () => save({ scimEnabled: true }, 'SCIM turned on.') }, 'Turn SCIM on'),
      );
      body.replaceChildren(...(sso.pendingTrustChange ? [pendingSection(sso.pendingTrustChange)] : []), saml, samlCertificatesSection(sso, decide), forIdp, scim);
    };

    const decide = (call: () => Promise<unknown>, done: string) => status.attempt(async () => {
      await call();
      await refresh();
    }, done);

    /** The change an API key proposed: what it would put in effect, and the administrator's choice. */
    const pendingSection = (pending: PendingTrustChange) => {
      const path = { params: { path: { changeId: pending.changeId } } };
      const { samlCertificates, samlCertificate: _pem, ...values } = pending.changes;
      return h('section', { class: 'pending', 'aria-label': 'Pending SAML change' },
        h('h2', {}, 'Pending SAML change'),
        h('p', { class: 'warning' },
          `Proposed by ${pending.proposedBy.type === 'apiKey' ? 'API key' : pending.proposedBy.type} ${pending.proposedBy.id} on ${formatDate(pending.proposedAt)}. ` +
          'It is not in effect: it decides who can sign in with SAML, administrators included. Confirm it only if you recognise it.'),
        h('dl', {},
          Object.entries(values).flatMap(([name, value]) => [h('dt', {}, name), h('dd', {}, h('code', {}, value === null ? '(cleared)' : String(value)))]),
          samlCertificates
            ? [h('dt', {}, 'IdP certificates'), h('dd', {}, samlCertificates.length === 0 ? 'none' : h('ul', {}, samlCertificates.map((cert) => h('li', {}, `${cert.subject}, SHA-256 ${cert.fingerprintSha256}, valid until ${formatDate(cert.validTo)}`))))]
            : [],
        ),
        h('button', { type: 'button', onclick: () => confirm('Put this SAML change in effect?') && decide(() => ok(api.POST('/api/employer/sso/trust-changes/{changeId}/confirm', path)), 'SAML change confirmed.') }, 'Confirm change'),
        h('button', { type: 'button', class: 'danger', onclick: () => decide(() => ok(api.DELETE('/api/employer/sso/trust-changes/{changeId}', path)), 'SAML change discarded.') }, 'Discard change'),
      );
    };

    main.append(status.element, once, body);
    await refresh();
    main.append(await adminRoleMappingSection());
    main.append(await emailDomainsSection());
    main.append(await scimRequestsSection());
  },
};
