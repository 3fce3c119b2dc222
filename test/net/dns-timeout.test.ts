// A webhook target whose host name never resolves costs an attempt at most WEBHOOK_DNS_TIMEOUT_MS and
// ends as a failed attempt (not allowed, like any host that does not resolve to public addresses); a
// subscription URL whose host never resolves is refused. The
// resolver is injected (one that never answers), so the test does not depend on any DNS server.
import { describe, expect, it } from 'vitest';
import { assertSafeTargetUrl, createSafeDispatcher, DnsTimeoutError, TARGET_NOT_ALLOWED, type HostResolver } from '../../src/net/safe-target.ts';
import { sendWebhookAttempt } from '../../src/webhooks/send.ts';

const neverAnswers: HostResolver = () => new Promise(() => {});

describe('DNS timeout of webhook targets', () => {
  it('fails the attempt once the host has not resolved in time: not allowed, or with private networks allowed (nothing hidden) saying so', async () => {
    // Either answer comes from the DNS bound, not from the 10 s attempt timeout ("timed out after").
    for (const [allowPrivateNetworks, error] of [[false, TARGET_NOT_ALLOWED], [true, 'hangs.example.test did not resolve within 50 ms']] as const) {
      const dispatcher = createSafeDispatcher({ allowPrivateNetworks, dnsTimeoutMs: 50, resolveHost: neverAnswers });
      try {
        const result = await sendWebhookAttempt({ url: 'https://hangs.example.test/hook', body: '{}', headers: { 'content-type': 'application/json' }, dispatcher });
        expect(result).toMatchObject({ ok: false, statusCode: null, responseBody: '', gone: false });
        expect(result.error).toContain(error);
      } finally {
        await dispatcher.close();
      }
    }
  });

  it('refuses a subscription URL whose host does not resolve in time, as not allowed (the timeout is the reason logged)', async () => {
    await expect(assertSafeTargetUrl('https://hangs.example.test/hook', { allowPrivateNetworks: false, dnsTimeoutMs: 50, resolveHost: neverAnswers }))
      .rejects.toMatchObject({ message: TARGET_NOT_ALLOWED, reason: 'hangs.example.test did not resolve within 50 ms' });
  });

  it('resolves through the injected resolver when it answers in time', async () => {
    const answers: HostResolver = async () => [{ address: '10.0.0.7', family: 4 }];
    await expect(assertSafeTargetUrl('https://internal.example.test/hook', { allowPrivateNetworks: false, resolveHost: answers }))
      .rejects.toMatchObject({ message: TARGET_NOT_ALLOWED, reason: expect.stringContaining('internal.example.test resolves to 10.0.0.7') });
    expect(new DnsTimeoutError('x').code).toBe('EDNSTIMEOUT');
  });
});
