// Domain names as claims name them, and the token of the DNS record that proves a claim. A name is compared in its
// ASCII form (IDNA/UTS #46: lower case, full-width and other compatibility forms mapped, Unicode
// labels as punycode), so no spelling of an address slips past a claim on its domain. A claim covers
// its domain exactly: subdomains are claimed on their own.
import { randomBytes } from 'node:crypto';
import { domainToASCII } from 'node:url';

export const DOMAIN_MAX = 253;
const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

/** The ASCII form of a domain name with two labels or more (and a top-level label that is not a number), else null. */
export function normalizeDomain(text: string): string | null {
  const ascii = domainToASCII(text.trim().replace(/\.$/, ''));
  if (ascii === '' || ascii.length > DOMAIN_MAX) return null;
  const labels = ascii.split('.');
  if (labels.length < 2 || !labels.every((label) => LABEL.test(label)) || /^\d+$/.test(labels.at(-1)!)) return null;
  return ascii;
}

/** The domain of an e-mail address (after its last @), normalised; null when it has none a claim could name. */
export function domainOfEmail(email: string): string | null {
  const at = email.lastIndexOf('@');
  return at < 0 ? null : normalizeDomain(email.slice(at + 1));
}

export function newVerificationToken(): string {
  return randomBytes(24).toString('base64url');
}
