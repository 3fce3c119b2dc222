import { describe, expect, it } from 'vitest';
import { isAddressAllowed, normalizeCidr, parseCidrs, parseClientAddress } from '../../src/api-keys/cidr.ts';

const allowed = (ip: string, cidrs: string[]) => isAddressAllowed(parseClientAddress(ip), parseCidrs(cidrs.map(normalizeCidr)));

describe('CIDR allowlists', () => {
  it('normalises entries: network address, compressed IPv6, bare addresses, IPv4-mapped ranges', () => {
    expect(normalizeCidr(' 10.1.2.3/8 ')).toBe('10.0.0.0/8');
    expect(normalizeCidr('203.0.113.7')).toBe('203.0.113.7/32');
    expect(normalizeCidr('2001:DB8:0:0::1/32')).toBe('2001:db8::/32');
    expect(normalizeCidr('2001:db8::1')).toBe('2001:db8::1/128');
    expect(normalizeCidr('::ffff:192.0.2.0/120')).toBe('192.0.2.0/24');
  });

  it('rejects what is not an address or CIDR, and ambiguous IPv4 notations', () => {
    for (const entry of ['', 'example.com', '10.0.0.0/33', '2001:db8::/129', '10.0.0.0/8/1', '0x7f.1', '127.1', '10.0.0.0/-1', 'fe80::1%eth0']) {
      expect(() => normalizeCidr(entry), entry).toThrow();
    }
  });

  it('matches IPv4 and IPv6 clients against their own family', () => {
    expect(allowed('203.0.113.9', ['203.0.113.0/24'])).toBe(true);
    expect(allowed('203.0.114.9', ['203.0.113.0/24'])).toBe(false);
    expect(allowed('2001:db8:1::5', ['2001:db8::/32'])).toBe(true);
    expect(allowed('2001:db9::5', ['2001:db8::/32'])).toBe(false);
    expect(allowed('2001:db8::5', ['0.0.0.0/0'])).toBe(false);
  });

  it('matches an IPv4-mapped IPv6 client against IPv4 ranges', () => {
    expect(allowed('::ffff:203.0.113.9', ['203.0.113.0/24'])).toBe(true);
    expect(allowed('::ffff:198.51.100.1', ['203.0.113.0/24'])).toBe(false);
  });

  it('allows every address when the allowlist is empty, and none that cannot be parsed otherwise', () => {
    expect(allowed('198.51.100.1', [])).toBe(true);
    expect(allowed('not-an-ip', ['0.0.0.0/0'])).toBe(false);
  });
});
