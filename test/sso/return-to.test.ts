import { describe, expect, it } from 'vitest';
import { normaliseReturnTo, postLoginLocation } from '../../src/sso/return-to.ts';

const config = { PUBLIC_BASE_URL: 'https://benefits.example.test', RETURN_TO_ALLOWED_ORIGINS: 'https://app.example.test, not a url ,https://portal.example.test:8443' };

describe('normaliseReturnTo', () => {
  it.each([
    ['/dashboard', '/dashboard'],
    ['/claims?tab=open#top', '/claims?tab=open#top'],
    ['https://benefits.example.test/settings', '/settings'],
    ['dashboard', '/dashboard'],
    ['https:evil.example', '/evil.example'], // same scheme as ours: a relative reference, as browsers read it
    ['https://app.example.test/welcome', 'https://app.example.test/welcome'],
    ['https://portal.example.test:8443/x', 'https://portal.example.test:8443/x'],
  ])('accepts %s as %s', (value, expected) => expect(normaliseReturnTo(value, config)).toBe(expected));

  it.each([
    'https://evil.example/',
    '//evil.example/',
    '/\\evil.example/',
    '\\\\evil.example',
    'javascript:alert(1)',
    'data:text/html,hi',
    'http://app.example.test/', // scheme is part of the origin
    'https://app.example.test.evil.example/',
    'https://portal.example.test/x', // port too
    '/a\r\nSet-Cookie: x=1',
    '',
    `/${'a'.repeat(2048)}`,
  ])('refuses %s', (value) => expect(normaliseReturnTo(value, config)).toBeNull());

  it('allows no other origin when the allowlist is empty', () =>
    expect(normaliseReturnTo('https://app.example.test/', { ...config, RETURN_TO_ALLOWED_ORIGINS: '' })).toBeNull());
});

describe('postLoginLocation', () => {
  const signIn = { signInUrl: 'https://benefits.example.test/api/auth/signin?token=t%2B1', token: 't+1' };

  it('goes to the sign-in exchange, passing a path on as next', () => {
    expect(postLoginLocation(signIn, null)).toBe(signIn.signInUrl);
    expect(postLoginLocation(signIn, '/claims?tab=open')).toBe(`${signIn.signInUrl}&next=${encodeURIComponent('/claims?tab=open')}`);
  });

  it('hands the token to an allowed origin', () => {
    const location = new URL(postLoginLocation(signIn, 'https://app.example.test/welcome?from=sso'));
    expect(location.origin).toBe('https://app.example.test');
    expect(location.searchParams.get('token')).toBe('t+1');
    expect(location.searchParams.get('from')).toBe('sso');
  });
});
