// Administrators from the identity provider, a section of the single sign-on page: which SCIM groups
// and which values of a SAML attribute make their users administrators of this employer.
import type { components } from '../../generated/api.d.ts';
import { api, ok } from '../api.ts';
import { field, h, notice } from '../dom.ts';

type Mapping = components['schemas']['AdminRoleMapping'];

/** One entry per line, blank lines left out. */
const lines = (text: string) => text.split('\n').map((line) => line.trim()).filter((line) => line !== '');

export async function adminRoleMappingSection(): Promise<HTMLElement> {
  const status = notice();
  const scimGroups = h('textarea', { name: 'scimGroups', rows: 3, autocomplete: 'off' });
  const samlAttribute = h('input', { name: 'samlAttribute', maxlength: 200, autocomplete: 'off', placeholder: 'groups' });
  const samlValues = h('textarea', { name: 'samlValues', rows: 3, autocomplete: 'off' });

  const show = (mapping: Mapping) => {
    scimGroups.value = mapping.scimGroups.join('\n');
    samlAttribute.value = mapping.samlAttribute ?? '';
    samlValues.value = mapping.samlValues.join('\n');
  };

  const form = h('form', {
    'aria-label': 'Administrator role mapping',
    onsubmit: (event: Event) => {
      event.preventDefault();
      void status.attempt(async () => {
        const attribute = samlAttribute.value.trim();
        show(await ok(api.PUT('/api/employer/admin-role-mapping', {
          body: { scimGroups: lines(scimGroups.value), samlAttribute: attribute === '' ? null : attribute, samlValues: lines(samlValues.value) },
        })));
      }, 'Administrator role mapping saved.');
    },
  },
    field('SCIM groups', scimGroups, 'One group per line, by id or display name. Their members are administrators.'),
    field('SAML attribute', samlAttribute, 'The assertion attribute that lists the user\'s groups; empty for none.'),
    field('SAML values', samlValues, 'One value per line: a user whose assertion carries one of them is an administrator at sign-in.'),
    h('button', { type: 'submit' }, 'Save mapping'),
  );

  show(await ok(api.GET('/api/employer/admin-role-mapping')));
  return h('section', { 'aria-label': 'Administrators from the identity provider' },
    h('h2', {}, 'Administrators from the identity provider'),
    h('p', {}, 'Removing a user from every mapped group, or deactivating the user, takes the role away at once, ends the user\'s sessions and revokes the API keys the user created. ' +
      'The identity provider never removes the last administrator: that is refused and e-mailed to the administrators.'),
    form, status.element);
}
