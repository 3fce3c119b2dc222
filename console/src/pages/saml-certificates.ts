// The SSO page's SAML certificates section: a banner before the IdP's last signing certificate expires
// and when reading its metadata failed, the certificates with their expiry, refreshing the metadata
// now, and the service's own SP key pairs (rotation with an overlap, signed AuthnRequests).
import type { components } from '../../generated/api.d.ts';
import { api, ok } from '../api.ts';
import { field, formatDate, h } from '../dom.ts';

type SsoConfiguration = components['schemas']['SsoConfiguration'];

/** `changed`: runs an action, reads the configuration again and announces `done`. */
export function samlCertificatesSection(sso: SsoConfiguration, changed: (action: () => Promise<unknown>, done: string) => Promise<void>): HTMLElement {
  const expiry = sso.samlCertificateExpiry;
  const failure = sso.samlMetadataRefresh.failure;
  const overlap = h('input', { type: 'number', name: 'overlapHours', min: 0, max: 2160, value: 168 });
  const signRequests = h('input', { type: 'checkbox', id: 'saml-sign-requests', ...(sso.samlSignAuthnRequests ? { checked: true } : {}) });

  return h('section', { 'aria-label': 'SAML certificates' },
    h('h2', {}, 'SAML certificates'),
    expiry?.warningDays != null
      ? h('p', { class: 'warning', role: 'alert', 'data-testid': 'certificate-expiry' },
        `The IdP signing certificate ${expiry.subject} expires on ${formatDate(expiry.validTo)}: SAML sign-in stops then unless the IdP rolls it. `
        + (sso.samlMetadataUrl ? 'The new certificate is read from the IdP metadata daily, or now with "Refresh IdP metadata".' : 'Paste the new certificate in the SAML settings.'))
      : null,
    failure
      ? h('p', { class: 'warning', role: 'alert', 'data-testid': 'metadata-failure' },
        `Reading the IdP metadata failed on ${formatDate(failure.at)}: ${failure.message} SAML keeps trusting the last good metadata.`)
      : null,
    h('table', {},
      h('caption', {}, 'IdP signing certificates'),
      h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Certificate'), h('th', { scope: 'col' }, 'Expires'), h('th', { scope: 'col' }, 'Trusted'))),
      h('tbody', {},
        sso.samlCertificates.map((cert) => h('tr', {}, h('td', {}, cert.subject, h('br'), h('small', {}, cert.fingerprintSha256)), h('td', {}, formatDate(cert.validTo)), h('td', {}, 'yes'))),
        sso.samlMetadataRefresh.retiringCertificates.map((cert) =>
          h('tr', {}, h('td', {}, cert.subject, h('br'), h('small', {}, cert.fingerprintSha256)), h('td', {}, formatDate(cert.validTo)), h('td', {}, `until ${formatDate(cert.trustedUntil)} (no longer in the metadata)`))),
        sso.samlCertificates.length === 0 ? h('tr', {}, h('td', { colspan: 3 }, 'None yet.')) : null,
      ),
    ),
    sso.samlMetadataUrl
      ? h('p', {},
        h('button', { type: 'button', onclick: () => changed(() => ok(api.POST('/api/employer/sso/metadata/refresh')), 'IdP metadata read again.') }, 'Refresh IdP metadata'),
        sso.samlMetadataRefresh.refreshedAt ? ` Last change from the metadata: ${formatDate(sso.samlMetadataRefresh.refreshedAt)}.` : '')
      : null,
    h('h3', {}, 'Service provider keys'),
    h('ul', {}, sso.spKeys.map((key) =>
      h('li', { 'data-testid': 'sp-key' },
        `SHA-256 ${key.fingerprintSha256}, issued ${formatDate(key.issuedAt)}`,
        key.signing ? ' (signs requests)' : '',
        key.retiresAt ? `, in use until ${formatDate(key.retiresAt)}` : ''))),
    h('form', {
      'aria-label': 'Rotate SP key',
      onsubmit: (event: Event) => {
        event.preventDefault();
        if (!confirm('Generate a new SP key pair? The current one keeps working for the overlap.')) return;
        void changed(() => ok(api.POST('/api/employer/sso/sp-keys/rotate', { body: { overlapHours: Number(overlap.value) } })), 'SP key rotated: download the SP metadata again for your IdP.');
      },
    },
      field('Overlap (hours)', overlap, 'How long the current key keeps signing and decrypting, for your IdP to take the new certificate.'),
      h('button', { type: 'submit' }, 'Rotate SP key'),
    ),
    h('div', { class: 'check' }, signRequests, h('label', { for: signRequests.id }, 'Sign AuthnRequests')),
    h('button', { type: 'button', onclick: () => changed(() => ok(api.POST('/api/employer/sso', { body: { samlSignAuthnRequests: signRequests.checked } })), 'Request signing saved.') }, 'Save request signing'),
  );
}
