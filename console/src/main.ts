// The admin console: the signed-in administrator's header and navigation, and one page per hash
// route. Without a session it shows how to sign in (one-time link or the employer's SAML login).
import './styles.css';
import type { components } from '../generated/api.d.ts';
import { api, ok } from './api.ts';
import { h, notice } from './dom.ts';
import { auditPage } from './pages/audit.ts';
import { auditStreamsPage } from './pages/audit-streams.ts';
import { exportsPage } from './pages/exports.ts';
import { keysPage } from './pages/keys.ts';
import { patientsPage } from './pages/patients.ts';
import { smartClientsPage } from './pages/smart-clients.ts';
import { ssoPage } from './pages/sso.ts';
import { webhooksPage } from './pages/webhooks.ts';

export type Session = components['schemas']['Session'];
export type Page = { title: string; render: (main: HTMLElement, session: Session) => Promise<void> };

const PAGES: Record<string, Page> = {
  keys: keysPage,
  'smart-clients': smartClientsPage,
  webhooks: webhooksPage,
  sso: ssoPage,
  patients: patientsPage,
  exports: exportsPage,
  audit: auditPage,
  'audit-streams': auditStreamsPage,
};

const header = document.getElementById('top')!;
const main = document.getElementById('main')!;

async function start() {
  const { data: session, response } = await api.GET('/api/auth/session');
  if (!session) {
    if (response.status === 401) return signInPage();
    main.replaceChildren(h('p', { role: 'alert' }, `The service could not be reached (${response.status}). Reload to try again.`));
    return;
  }
  window.addEventListener('hashchange', () => void show(session));
  await show(session);
}

async function show(session: Session) {
  const name = location.hash.replace(/^#\/?/, '') || 'keys';
  const page = PAGES[name] ?? PAGES.keys!;
  renderHeader(session, name);
  document.title = `${page.title} · Employer console`;
  main.replaceChildren(h('h1', {}, page.title));
  try {
    await page.render(main, session);
    // Time from navigation to a usable page: read by `npm run bench -- console`.
    if (performance.getEntriesByName('console-ready').length === 0) performance.mark('console-ready');
  } catch (error) {
    main.append(h('p', { role: 'alert', class: 'notice fail' }, error instanceof Error ? error.message : String(error)));
  }
}

function renderHeader(session: Session, current: string) {
  const status = notice();
  header.replaceChildren(
    h('div', { class: 'who' },
      h('strong', {}, 'Employer console'),
      h('span', { 'data-testid': 'user' }, session.user.email),
      h('span', {}, `Employer ${session.employerId}`),
      h('button', {
        type: 'button',
        onclick: async () => {
          try {
            await ok(api.POST('/api/auth/logout'));
            location.hash = '';
            location.reload();
          } catch (error) {
            status.fail(error);
          }
        },
      }, 'Sign out'),
      status.element,
    ),
    h('nav', { 'aria-label': 'Sections' },
      h('ul', {}, Object.entries(PAGES).map(([name, page]) =>
        h('li', {}, h('a', { href: `#/${name}`, ...(name === current ? { 'aria-current': 'page' } : {}) }, page.title)))),
    ),
  );
}

function signInPage() {
  document.title = 'Sign in · Employer console';
  header.replaceChildren(h('div', { class: 'who' }, h('strong', {}, 'Employer console')));
  const employer = h('input', { id: 'saml-employer', name: 'employerId', required: true, autocomplete: 'organization' });
  main.replaceChildren(
    h('h1', {}, 'Sign in'),
    h('p', {}, 'Open the one-time sign-in link you received (it is valid once, for a short time), or sign in through your organisation\'s single sign-on.'),
    h('form', {
      onsubmit: (event: Event) => {
        event.preventDefault();
        location.assign(`/api/auth/saml/start/${encodeURIComponent(employer.value.trim())}?returnTo=${encodeURIComponent('/')}`);
      },
    },
      h('div', { class: 'field' }, h('label', { for: employer.id }, 'Employer id'), employer),
      h('button', { type: 'submit' }, 'Sign in with SSO'),
    ),
  );
}

void start();
