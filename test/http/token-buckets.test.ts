// Limits per client address count an IPv6 client by its /64 (the smallest block one subscriber gets),
// an IPv4 client by its address, and an IPv4-mapped IPv6 address as the IPv4 address it maps.
import { describe, expect, it } from 'vitest';
import { clientAddressKey, createTokenBuckets } from '../../src/http/token-buckets.ts';

describe('clientAddressKey', () => {
  it('keys IPv6 addresses by their /64, IPv4 by the address, mapped IPv4 as IPv4', () => {
    expect(clientAddressKey('2001:db8:1:2::1')).toBe('2001:db8:1:2::/64');
    expect(clientAddressKey('2001:0db8:0001:0002:ffff:ffff:ffff:ffff')).toBe('2001:db8:1:2::/64');
    expect(clientAddressKey('2001:db8:1:3::1')).toBe('2001:db8:1:3::/64');
    expect(clientAddressKey('203.0.113.7')).toBe('203.0.113.7');
    expect(clientAddressKey('203.0.113.8')).toBe('203.0.113.8');
    expect(clientAddressKey('::ffff:203.0.113.7')).toBe('203.0.113.7');
    expect(clientAddressKey('::1')).toBe('::/64');
    expect(clientAddressKey('not an address')).toBe('not an address');
  });

  it('gives all addresses of one /64 a single allowance, and another /64 its own', () => {
    const buckets = createTokenBuckets({ perSecond: 0.0001, burst: 3 }, () => 0);
    for (let host = 1; host <= 3; host++) expect(buckets.take(clientAddressKey(`2001:db8:1:2::${host.toString(16)}`)).allowed).toBe(true);
    expect(buckets.take(clientAddressKey('2001:db8:1:2:abcd::99')).allowed).toBe(false);
    expect(buckets.take(clientAddressKey('2001:db8:1:3::1')).allowed).toBe(true);
    for (let i = 0; i < 3; i++) buckets.take(clientAddressKey('::ffff:198.51.100.1'));
    expect(buckets.take(clientAddressKey('198.51.100.1')).allowed).toBe(false);
    expect(buckets.take(clientAddressKey('198.51.100.2')).allowed).toBe(true);
  });
});

describe('createTokenBuckets', () => {
  it('takes a token back on refund, never past the burst', () => {
    const buckets = createTokenBuckets({ perSecond: 0.0001, burst: 2 }, () => 0);
    buckets.take('client');
    buckets.take('client');
    expect(buckets.take('client').allowed).toBe(false);
    buckets.refund('client');
    expect(buckets.take('client').allowed).toBe(true);
    buckets.refund('client');
    buckets.refund('client');
    buckets.refund('client');
    expect([buckets.take('client').allowed, buckets.take('client').allowed, buckets.take('client').allowed]).toEqual([true, true, false]);
    buckets.refund('never seen');
    expect(buckets.peek('never seen')).toEqual({ allowed: true });
  });
});
