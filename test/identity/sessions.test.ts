import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { randomToken, sha256Hex } from '../../src/crypto/tokens.ts';
import { handleCommand } from '../../src/event-store/command-handler.ts';
import { issueSignInToken } from '../../src/identity/commands.ts';
import { signInTokenDecider, signInTokenStream } from '../../src/identity/signin-token.ts';
import { CONSOLE_CSP } from '../../src/console/plugin.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { followSignInLink, signInFormOf } from '../support/sign-in.ts';

describe('sign-in links and browser sessions', () => {
  let service: TestService;
  beforeAll(async () => {
    service = await startTestService();
  });
  afterAll(async () => service?.stop());

  it('exchanges a sign-in link for a session cookie that identifies the admin', async () => {
    const tenant = await service.createTenant({ adminEmail: 'first-admin@acme.test' });
    const response = await fetch(`${service.url}/api/auth/session`, { headers: { cookie: tenant.cookie } });
    expect(response.status).toBe(200);
    const body = await response.json();
    expect(body).toMatchObject({ employerId: tenant.employerId, user: { id: tenant.adminUserId, email: 'first-admin@acme.test', role: 'EMPLOYER_ADMIN' } });
  });

  const newLink = async (tenant: { employerId: string; adminUserId: string }) =>
    (await issueSignInToken(service.ctx, { tenantId: tenant.employerId, actor: { type: 'system', id: 't' } }, { userId: tenant.adminUserId, via: 'cli' })).signInUrl;
  const post = (form: URLSearchParams, headers: Record<string, string>) =>
    fetch(`${service.url}/api/auth/signin`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers }, body: form, redirect: 'manual' });
  const sessionStatus = async (cookie: string) => (await fetch(`${service.url}/api/auth/session`, { headers: { cookie } })).status;

  it('opening a sign-in link with a GET signs nobody in: it shows a confirmation page whose form, posted from this origin, does (login CSRF)', async () => {
    const tenant = await service.createTenant({ adminEmail: 'confirm-<admin>@acme.test' });
    const link = `${await newLink(tenant)}&next=${encodeURIComponent('/claims?tab=open')}`;

    // The attack: a page makes the victim's browser GET the attacker's link. No cookie, nothing used up.
    for (let opened = 0; opened < 2; opened++) {
      const page = await fetch(link, { redirect: 'manual' });
      expect(page.status).toBe(200);
      expect(page.headers.getSetCookie()).toEqual([]);
      expect(page.headers.get('content-type')).toMatch(/^text\/html/);
      expect(page.headers.get('content-security-policy')).toBe(CONSOLE_CSP);
      expect(page.headers.get('cache-control')).toBe('no-store');
      const html = await page.text();
      expect(html).not.toMatch(/<script|\sstyle=|\son[a-z]+=/i); // nothing the strict CSP would block
      expect(html).toContain('confirm-&lt;admin&gt;@acme.test'); // names the account, escaped
      expect(html).toMatch(/<button type="submit" autofocus>/); // one key press from the keyboard
      const { action, fields } = signInFormOf(html);
      expect(action).toBe(`${service.url}/api/auth/signin`); // the token travels in the body, not in the POST's URL
      expect(Object.fromEntries(fields)).toEqual({ token: new URL(link).searchParams.get('token'), next: '/claims?tab=open' });
    }

    const { fields } = signInFormOf(await (await fetch(link)).text());
    // Posted from another site, or with no origin at all: refused, and the token stays usable.
    for (const headers of [{ origin: 'https://evil.example' }, { referer: 'https://evil.example/page' }, {}] as Array<Record<string, string>>) {
      const refused = await post(fields, headers);
      expect(refused.status).toBe(403);
      expect(await refused.json()).toMatchObject({ code: 'CSRF_REJECTED' });
      expect(refused.headers.getSetCookie()).toEqual([]);
    }
    // From the page (Origin of this service): signed in, sent on to next.
    const signedIn = await post(fields, { origin: service.url });
    expect(signedIn.status).toBe(303);
    expect(signedIn.headers.get('location')).toBe('/claims?tab=open');
    const setCookie = signedIn.headers.getSetCookie().join('\n');
    expect(setCookie).toMatch(/ei_session=/);
    expect(setCookie).toMatch(/HttpOnly/i);
    expect(setCookie).toMatch(/SameSite=Lax/i);
    expect(setCookie).not.toMatch(/Secure/); // the test service's public URL is http
    expect(await sessionStatus(setCookie.split(';')[0]!)).toBe(200);
    // Used: the link's page and the form both refuse it now.
    expect((await fetch(link)).status).toBe(401);
    expect((await post(fields, { origin: service.url })).status).toBe(401);
  });

  it('accepts the form from a browser that sends only a Referer of this origin, and as JSON', async () => {
    const tenant = await service.createTenant();
    const byReferer = await post(new URLSearchParams({ token: new URL(await newLink(tenant)).searchParams.get('token')! }), { referer: `${service.url}/api/auth/signin?token=x` });
    expect(byReferer.status).toBe(303);
    const asJson = await fetch(`${service.url}/api/auth/signin`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: service.url },
      body: JSON.stringify({ token: new URL(await newLink(tenant)).searchParams.get('token') }),
      redirect: 'manual',
    });
    expect(asJson.status).toBe(303);
    expect(asJson.headers.get('location')).toBe('/api/auth/session');
  });

  it('redirects to next only when the URL parser resolves it to a path on this service (no open redirect)', async () => {
    const tenant = await service.createTenant();
    const locationAfterSignIn = async (next: string) => {
      const signIn = await followSignInLink(`${await newLink(tenant)}&next=${encodeURIComponent(next)}`);
      expect(signIn.status, next).toBe(303);
      // A form posted without the page (next as the caller wrote it) is held to the same rule.
      const direct = await post(new URLSearchParams({ token: new URL(await newLink(tenant)).searchParams.get('token')!, next }), { origin: service.url });
      expect(direct.headers.get('location'), next).toBe(signIn.next);
      return signIn.next;
    };
    const bypasses = [
      '/\\evil.example', '//evil.example', '\\\\evil.example', 'https://evil.example/', '/%5Cevil.example', '/%2F%2Fevil.example', '/\t/evil.example',
      '/\n/evil.example', '\t//evil.example', 'java\nscript:alert(1)', 'javascript:alert(1)', 'http:evil.example', '/.//evil.example', `${service.url}@evil.example/`,
    ];
    for (const next of bypasses) {
      const location = await locationAfterSignIn(next);
      expect(location, next).not.toBeNull();
      // Either the default, or a path whose resolution stays on our origin.
      expect(new URL(location!, service.url).origin, next).toBe(new URL(service.url).origin);
      expect(location!.startsWith('//') || location!.includes('\\'), next).toBe(false);
    }
    expect(await locationAfterSignIn('/\\evil.example')).toBe('/api/auth/session');
    expect(await locationAfterSignIn('//evil.example')).toBe('/api/auth/session');
    expect(await locationAfterSignIn('https://evil.example/')).toBe('/api/auth/session');
    expect(await locationAfterSignIn('/claims?tab=open#top')).toBe('/claims?tab=open#top');
    expect(await locationAfterSignIn(`${service.url}/claims`)).toBe('/claims');
    expect(await locationAfterSignIn('/a/../claims')).toBe('/claims');
  });

  it('accepts a sign-in token once only', async () => {
    const tenant = await service.createTenant();
    const link = await newLink(tenant);
    expect((await followSignInLink(link)).status).toBe(303);
    const second = await fetch(link, { redirect: 'manual' });
    expect(second.status).toBe(401);
    expect(await second.json()).toMatchObject({ code: 'INVALID_SIGNIN_TOKEN' });
  });

  it('refuses an expired sign-in token', async () => {
    const tenant = await service.createTenant();
    const token = randomToken();
    const tokenId = randomUUID();
    // Issued with an expiry already past: the decider compares it with the redemption time.
    await handleCommand(service.ctx.commands, {
      streamName: signInTokenStream(tenant.employerId, tokenId),
      decider: signInTokenDecider,
      command: { type: 'IssueSignInToken', tokenId, userId: tenant.adminUserId, tokenHash: sha256Hex(token), expiresAt: new Date(Date.now() - 1000).toISOString(), via: 'cli' },
      context: { tenantId: tenant.employerId, actor: { type: 'system', id: 'test' } },
    });
    const response = await fetch(`${service.url}/api/auth/signin?token=${token}`, { redirect: 'manual' });
    expect(response.status).toBe(401);
    expect(await response.json()).toMatchObject({ code: 'INVALID_SIGNIN_TOKEN' });
    const posted = await post(new URLSearchParams({ token }), { origin: service.url });
    expect(posted.status).toBe(401);
    expect(await posted.json()).toMatchObject({ code: 'INVALID_SIGNIN_TOKEN' });
  });

  it('refuses unknown tokens with the documented error shape', async () => {
    const response = await fetch(`${service.url}/api/auth/signin?token=not-a-real-token`, { redirect: 'manual' });
    expect(response.status).toBe(401);
    const body = await response.json();
    expect(body).toEqual({ code: 'INVALID_SIGNIN_TOKEN', message: expect.any(String), requestId: expect.any(String) });
  });

  it('logs out: the cookie stops working', async () => {
    const tenant = await service.createTenant();
    const logout = await fetch(`${service.url}/api/auth/logout`, { method: 'POST', headers: service.sessionHeaders(tenant.cookie) });
    expect(logout.status).toBe(204);
    const after = await fetch(`${service.url}/api/auth/session`, { headers: { cookie: tenant.cookie } });
    expect(after.status).toBe(401);
  });

  it('rejects a cookie-authenticated write from another origin or with no origin (CSRF)', async () => {
    const tenant = await service.createTenant();
    const crossSite = await fetch(`${service.url}/api/auth/logout`, { method: 'POST', headers: { cookie: tenant.cookie, origin: 'https://evil.example' } });
    expect(crossSite.status).toBe(403);
    expect(await crossSite.json()).toMatchObject({ code: 'CSRF_REJECTED' });
    const noOrigin = await fetch(`${service.url}/api/auth/logout`, { method: 'POST', headers: { cookie: tenant.cookie } });
    expect(noOrigin.status).toBe(403);
    // the session survived both attempts
    expect((await fetch(`${service.url}/api/auth/session`, { headers: { cookie: tenant.cookie } })).status).toBe(200);
  });

  it('keeps sessions apart per tenant', async () => {
    const a = await service.createTenant();
    const b = await service.createTenant();
    type Session = { employerId: string; user: { id: string } };
    const sessionA = (await (await fetch(`${service.url}/api/auth/session`, { headers: { cookie: a.cookie } })).json()) as Session;
    const sessionB = (await (await fetch(`${service.url}/api/auth/session`, { headers: { cookie: b.cookie } })).json()) as Session;
    expect(sessionA.employerId).toBe(a.employerId);
    expect(sessionB.employerId).toBe(b.employerId);
    expect(sessionA.user.id).not.toBe(sessionB.user.id);
  });

  it('answers unknown routes with 404 in the error shape', async () => {
    const response = await fetch(`${service.url}/api/nothing-here`);
    expect(response.status).toBe(404);
    expect(await response.json()).toMatchObject({ code: 'NOT_FOUND', requestId: expect.any(String) });
  });
});
