// The SCIM token's rotation, a part of the single sign-on page's SCIM section: rotate with an overlap
// during which the replaced token keeps provisioning (so the IdP administrator has time to paste the
// new one), see until when, and end the overlap early.
import type { components } from '../../generated/api.d.ts';
import { api, ok } from '../api.ts';
import { field, formatDate, h, secretPanel, type Notice } from '../dom.ts';

type ScimTokenStatus = components['schemas']['ScimTokenStatus'];

export const SCIM_TOKEN_WARNING = 'Copy this SCIM bearer token into your identity provider now: it is shown only this once.';

/** The controls for an enabled SCIM's token; `changed` re-renders the page after an action. */
export function scimTokenControls(token: ScimTokenStatus, deps: { status: Notice; once: HTMLElement; changed: () => Promise<void> }): Node[] {
  const hours = h('input', { name: 'scimOverlapHours', type: 'number', min: 0, max: 168, step: 'any', value: 1, required: true });
  const rotate = h('form', {
    'aria-label': 'Rotate the SCIM token',
    onsubmit: (event: Event) => {
      event.preventDefault();
      void deps.status.attempt(async () => {
        const rotated = await ok(api.POST('/api/employer/sso/scim-token/rotate', { body: { overlapSeconds: Math.round(Number(hours.value) * 3600) } }));
        await deps.changed();
        deps.once.replaceChildren(secretPanel('SCIM bearer token', rotated.scimBearerToken, rotated.previousTokenValidUntil
          ? `${SCIM_TOKEN_WARNING} The previous token keeps working until ${formatDate(rotated.previousTokenValidUntil)}.`
          : `${SCIM_TOKEN_WARNING} The previous token has stopped working.`));
      }, 'SCIM token rotated.');
    },
  },
    field('Overlap (hours)', hours, 'The previous token keeps provisioning this long. 0: it stops at once; at most 168 (7 days).'),
    h('button', { type: 'submit' }, 'Rotate SCIM token'),
  );
  const endOverlap = () =>
    confirm('Stop the previous SCIM token now? An identity provider still using it fails.') &&
    deps.status.attempt(async () => {
      await ok(api.POST('/api/employer/sso/scim-token/end-overlap'));
      await deps.changed();
    }, 'The previous SCIM token has stopped working.');
  if (!token.previousTokenValidUntil) return [rotate];
  return [
    rotate,
    h('p', { 'data-testid': 'scim-overlap' }, `The previous token works until ${formatDate(token.previousTokenValidUntil)}. `,
      h('button', { type: 'button', onclick: endOverlap }, 'Stop previous token')),
  ];
}
