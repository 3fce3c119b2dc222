// Refusals are checked before any socket opens, so no test here sends traffic anywhere but
// 127.0.0.1; the dispatcher tests use loopback targets that a test receiver actually listens on.
import type { Agent } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assertSafeTargetUrl, createSafeDispatcher, refusedAddressClass, TARGET_NOT_ALLOWED, UnsafeTargetError, type HostResolver } from '../../src/net/safe-target.ts';
import { sendWebhookAttempt } from '../../src/webhooks/send.ts';
import { startHttpsReceiver, type HttpsReceiver } from '../support/https-receiver.ts';

const checked = { allowPrivateNetworks: false };
const unchecked = { allowPrivateNetworks: true };

describe('refusedAddressClass', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['10.0.0.1', 'private'],
    ['172.16.5.4', 'private'],
    ['192.168.1.1', 'private'],
    ['169.254.169.254', 'linkLocal'],
    ['100.64.0.1', 'carrierGradeNat'],
    ['0.0.0.0', 'unspecified'],
    ['255.255.255.255', 'broadcast'],
    ['224.0.0.1', 'multicast'],
    ['192.0.2.10', 'reserved'],
    ['198.51.100.7', 'reserved'],
    ['203.0.113.9', 'reserved'],
    ['240.0.0.1', 'reserved'],
    ['::1', 'loopback'],
    ['::', 'unspecified'],
    ['fe80::1', 'linkLocal'],
    ['fc00::1', 'uniqueLocal'],
    ['fd12:3456::1', 'uniqueLocal'],
    ['ff02::1', 'multicast'],
    ['2001:db8::1', 'reserved'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:10.1.2.3', 'private'],
    ['::ffff:169.254.169.254', 'linkLocal'],
    ['64:ff9b::a00:1', 'rfc6052'],
    ['2002:7f00:1::', '6to4'],
    ['::7f00:1', 'outside global unicast'],
  ])('refuses %s as %s', (address, expectedClass) => {
    expect(refusedAddressClass(address)).toContain(expectedClass);
  });

  it.each(['93.184.215.14', '8.8.8.8', '2606:4700:4700::1111', '::ffff:8.8.8.8'])('accepts the public address %s', (address) => {
    expect(refusedAddressClass(address)).toBeNull();
  });
});

describe('assertSafeTargetUrl', () => {
  it.each([
    ['https://127.0.0.1/hook', 'loopback'],
    ['https://10.0.0.1/hook', '10.0.0.1 is a private address'],
    ['https://169.254.169.254/latest/meta-data', 'linkLocal'],
    ['https://[::1]/hook', 'loopback'],
    ['https://[fc00::1]/hook', 'uniqueLocal'],
    ['https://[::ffff:127.0.0.1]/hook', 'loopback'],
    ['https://100.64.0.1/hook', 'carrierGradeNat'],
    ['https://2130706433/hook', 'loopback'],
    ['https://0x7f.1/hook', 'loopback'],
    ['https://localhost:8443/hook', 'localhost resolves to'],
  ])('refuses %s as not allowed (reason for the log: %s)', async (url, reason) => {
    const refusal = await assertSafeTargetUrl(url, checked).catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(UnsafeTargetError);
    expect(refusal).toMatchObject({ message: TARGET_NOT_ALLOWED, reason: expect.stringContaining(reason) });
  });

  it('gives a name resolving to 10.0.0.1, a name that does not resolve and a literal private IP the same refusal text', async () => {
    const resolver: HostResolver = async (hostname) => {
      if (hostname === 'internal.example.test') return [{ address: '10.0.0.1', family: 4 }];
      throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    };
    const logged: unknown[] = [];
    const options = { allowPrivateNetworks: false, resolveHost: resolver, logger: { debug: (entry: unknown) => void logged.push(entry) } };
    const urls = ['https://internal.example.test/hook', 'https://missing.example.test/hook', 'https://10.0.0.1/hook'];
    const refusals: Array<string | null> = [];
    for (const url of urls) refusals.push(await assertSafeTargetUrl(url, options).then(() => null, (error: Error) => error.message));
    expect(refusals).toEqual([TARGET_NOT_ALLOWED, TARGET_NOT_ALLOWED, TARGET_NOT_ALLOWED]);
    expect(TARGET_NOT_ALLOWED).toContain('not allowed');
    expect(TARGET_NOT_ALLOWED).not.toMatch(/10\.0\.0\.1|private|could not/);
    // The reasons reach the server's debug log, host and address only (no path).
    expect(logged).toEqual([
      { host: 'internal.example.test', reason: 'internal.example.test resolves to 10.0.0.1, which is a private address' },
      { host: 'missing.example.test', reason: 'missing.example.test could not be resolved (ENOTFOUND)' },
      { host: '10.0.0.1', reason: '10.0.0.1 is a private address' },
    ]);

    // Deliveries (what the tenant reads in the delivery log) get the same text from the dispatcher.
    const dispatcher = createSafeDispatcher(options);
    try {
      const errors = await Promise.all(urls.map(async (url) => (await sendWebhookAttempt({ url, body: '{}', headers: { 'content-type': 'application/json' }, dispatcher })).error));
      expect(errors).toEqual([TARGET_NOT_ALLOWED, TARGET_NOT_ALLOWED, TARGET_NOT_ALLOWED]);
    } finally {
      await dispatcher.close();
    }
  });

  it('accepts a public https address', async () => {
    const url = await assertSafeTargetUrl('https://93.184.215.14:8443/hooks?team=a', checked);
    expect(url.href).toBe('https://93.184.215.14:8443/hooks?team=a');
  });

  it('requires https, with or without the address check', async () => {
    for (const options of [checked, unchecked]) {
      await expect(assertSafeTargetUrl('http://93.184.215.14/hook', options)).rejects.toThrow('must use https, not http');
      await expect(assertSafeTargetUrl('ftp://93.184.215.14/hook', options)).rejects.toThrow('must use https');
    }
  });

  it('refuses invalid urls, embedded credentials and unresolvable hosts without echoing the url', async () => {
    await expect(assertSafeTargetUrl('not a url', checked)).rejects.toThrow('not a valid absolute URL');
    const withCredentials = assertSafeTargetUrl('https://user:hunter2@93.184.215.14/hook', unchecked);
    await expect(withCredentials).rejects.toThrow('must not contain credentials');
    await expect(withCredentials).rejects.not.toThrow('hunter2');
    await expect(assertSafeTargetUrl('https://no-such-host.invalid/hook', checked)).rejects.toMatchObject({ message: TARGET_NOT_ALLOWED, reason: expect.stringContaining('could not be resolved') });
  });

  it('lets allowPrivateNetworks accept private and loopback targets', async () => {
    for (const url of ['https://127.0.0.1:8443/hook', 'https://10.0.0.1/hook', 'https://[::1]/hook', 'https://localhost/hook']) {
      await expect(assertSafeTargetUrl(url, unchecked)).resolves.toBeInstanceOf(URL);
    }
  });
});

describe('createSafeDispatcher', () => {
  let receiver: HttpsReceiver;
  let dispatchers: { checked: Agent; unchecked: Agent };
  beforeAll(async () => {
    receiver = await startHttpsReceiver();
    dispatchers = { checked: createSafeDispatcher({ ...checked, ca: receiver.ca }), unchecked: createSafeDispatcher({ ...unchecked, ca: receiver.ca }) };
  });
  afterAll(async () => {
    await Promise.all([dispatchers.checked.close(), dispatchers.unchecked.close()]);
    await receiver.close();
  });

  const port = () => new URL(receiver.url).port;
  const attempt = (url: string, allowPrivateNetworks: boolean) =>
    sendWebhookAttempt({
      url,
      body: '{}',
      headers: { 'content-type': 'application/json' },
      dispatcher: allowPrivateNetworks ? dispatchers.unchecked : dispatchers.checked,
    });

  it.each([
    'https://127.0.0.1:PORT/hook',
    'https://[::ffff:127.0.0.1]:PORT/hook',
    'https://[::1]:PORT/hook',
    // A host name goes through the dispatcher's own lookup, which checks what it connects to.
    'https://localhost:PORT/hook',
  ])('refuses %s at connect time, before any connection', async (url) => {
    const before = receiver.connectionCount();
    const result = await attempt(url.replace('PORT', port()), false);
    expect(result).toMatchObject({ ok: false, statusCode: null, error: TARGET_NOT_ALLOWED });
    expect(receiver.connectionCount()).toBe(before);
  });

  it('connects to the same loopback receiver when allowPrivateNetworks is set', async () => {
    for (const host of ['127.0.0.1', 'localhost']) {
      const result = await attempt(`https://${host}:${port()}/hook`, true);
      expect(result).toMatchObject({ ok: true, statusCode: 200, error: null });
    }
  });

  it('never connects over plain http, even with allowPrivateNetworks', async () => {
    const before = receiver.connectionCount();
    const result = await attempt(`http://127.0.0.1:${port()}/hook`, true);
    expect(result).toMatchObject({ ok: false, statusCode: null });
    expect(result.error).toContain('http is not https');
    expect(receiver.connectionCount()).toBe(before);
  });
});
