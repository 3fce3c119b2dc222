// CIDR allowlists of API keys, IPv4 and IPv6 (ipaddr.js). Allowlist entries are normalised when a key
// is created (network address, compressed IPv6, a bare address becomes /32 or /128, an IPv4-mapped
// IPv6 range becomes the IPv4 range) and client addresses are unmapped (::ffff:203.0.113.7 is
// 203.0.113.7), so an IPv4 range matches a client reaching a dual-stack listener.
import ipaddr from 'ipaddr.js';

export type Address = ipaddr.IPv4 | ipaddr.IPv6;
export type Cidr = [Address, number];

/** The canonical text of a CIDR or bare address; throws an Error saying why the entry is invalid. */
export function normalizeCidr(entry: string): string {
  const text = entry.trim();
  const [addressText = '', prefixText, ...rest] = text.split('/');
  if (rest.length > 0 || !isStrictAddress(addressText)) throw new Error(`"${entry}" is not an IPv4 or IPv6 address or CIDR`);
  let address: Address = ipaddr.parse(addressText);
  const maxPrefix = address.kind() === 'ipv4' ? 32 : 128;
  let prefix = prefixText === undefined ? maxPrefix : /^\d{1,3}$/.test(prefixText) ? Number(prefixText) : NaN;
  if (!(prefix >= 0 && prefix <= maxPrefix)) throw new Error(`"${entry}" has an invalid prefix length (0-${maxPrefix})`);
  if (address instanceof ipaddr.IPv6 && address.isIPv4MappedAddress() && prefix >= 96) {
    address = address.toIPv4Address();
    prefix -= 96;
  }
  const network = address instanceof ipaddr.IPv4
    ? ipaddr.IPv4.networkAddressFromCIDR(`${address.toString()}/${prefix}`)
    : ipaddr.IPv6.networkAddressFromCIDR(`${address.toString()}/${prefix}`);
  return `${network.toString()}/${prefix}`;
}

/** Only the usual notations: dotted four-part decimal IPv4 (not 0x7f.1 or 127.1) and IPv6 without a zone. */
function isStrictAddress(text: string): boolean {
  return ipaddr.IPv4.isValidFourPartDecimal(text) || (ipaddr.IPv6.isValid(text) && !text.includes('%'));
}

export function parseCidrs(normalized: readonly string[]): Cidr[] {
  return normalized.map((entry) => ipaddr.parseCIDR(entry));
}

/** The client's address as matched against allowlists, or null when it cannot be parsed. */
export function parseClientAddress(ip: string): Address | null {
  return ipaddr.isValid(ip) ? ipaddr.process(ip) : null;
}

export function isAddressAllowed(address: Address | null, allowlist: readonly Cidr[]): boolean {
  if (allowlist.length === 0) return true;
  if (!address) return false;
  return allowlist.some(([network, prefix]) => network.kind() === address.kind() && address.match(network, prefix));
}
