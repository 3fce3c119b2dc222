import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { randomToken, sha256Hex } from '../../src/crypto/tokens.ts';
import { handleCommand } from '../../src/event-store/command-handler.ts';
import { issueSignInToken } from '../../src/identity/commands.ts';
import { signInTokenDecider, signInTokenStream } from '../../src/identity/signin-token.ts';
import { startTestService, type TestService } from '../support/service.ts';

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

  it('sets the cookie HttpOnly and SameSite=Lax', async () => {
    const tenant = await service.createTenant();
    const { signInUrl } = await issueSignInToken(service.ctx, { tenantId: tenant.employerId, actor: { type: 'system', id: 't' } }, { userId: tenant.adminUserId, via: 'cli' });
    const response = await fetch(signInUrl, { redirect: 'manual' });
    const setCookie = response.headers.getSetCookie().join('\n');
    expect(setCookie).toMatch(/ei_session=/);
    expect(setCookie).toMatch(/HttpOnly/i);
    expect(setCookie).toMatch(/SameSite=Lax/i);
    expect(setCookie).not.toMatch(/Secure/); // the test service's public URL is http
  });

  it('redirects to next only when the URL parser resolves it to a path on this service (no open redirect)', async () => {
    const tenant = await service.createTenant();
    const locationAfterSignIn = async (next: string) => {
      const { signInUrl } = await issueSignInToken(service.ctx, { tenantId: tenant.employerId, actor: { type: 'system', id: 't' } }, { userId: tenant.adminUserId, via: 'cli' });
      const response = await fetch(`${signInUrl}&next=${encodeURIComponent(next)}`, { redirect: 'manual' });
      expect(response.status, next).toBe(302);
      return response.headers.get('location');
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
    const { signInUrl } = await issueSignInToken(service.ctx, { tenantId: tenant.employerId, actor: { type: 'system', id: 't' } }, { userId: tenant.adminUserId, via: 'cli' });
    expect((await fetch(signInUrl, { redirect: 'manual' })).status).toBe(302);
    const second = await fetch(signInUrl, { redirect: 'manual' });
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
