// TRUST_PROXY: "false" (default: the client address is the socket's), "true" (trust every hop; only
// behind a proxy that overwrites X-Forwarded-For), or a comma-separated list of proxy addresses/CIDRs.
export function resolveTrustProxy(value: string): boolean | string[] {
  const trimmed = value.trim().toLowerCase();
  if (trimmed === '' || trimmed === 'false' || trimmed === '0') return false;
  if (trimmed === 'true' || trimmed === '1') return true;
  return value.split(',').map((entry) => entry.trim()).filter(Boolean);
}
