// Domain claims as domain management shows them, and the holders of verified domains.
import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import { VERIFICATION_METHODS, verificationRecord } from '../../src/email-domains/events.ts';
import { notFound } from '../../src/http/errors.ts';
import { pageOf, type Keyset } from '../../src/http/page.ts';

export const emailDomainClaim = z
  .object({
    domain: z.string().meta({ description: 'In its ASCII form (punycode for Unicode labels), lower case.' }),
    status: z.enum(['pending', 'verified']).meta({
      description: 'verified: new addresses in the domain can be taken up by this employer only. pending: the claim protects nothing yet.',
    }),
    txtRecord: z
      .object({ name: z.string(), type: z.literal('TXT'), value: z.string() })
      .meta({ description: 'The DNS record to publish before verifying. It may be removed once the claim is verified.' }),
    claimedAt: z.string(),
    verifiedAt: z.string().nullable(),
    verificationMethod: z.enum(VERIFICATION_METHODS).nullable().meta({ description: 'dns: the TXT record was found; operator: verified with the operator CLI.' }),
  })
  .meta({ id: 'EmailDomainClaim' });
export type EmailDomainClaim = z.infer<typeof emailDomainClaim>;

const claimRow = z.object({
  domain: z.string(),
  verification_token: z.string(),
  claimed_at: z.string(),
  verified_at: z.string().nullable(),
  verification_method: z.enum(VERIFICATION_METHODS).nullable(),
  // claimed_at to the microsecond, for the list's cursor.
  cursor_at: z.string(),
});

const selectClaims = sql.fragment`
  SELECT domain, verification_token, claimed_at, verified_at, verification_method, claimed_at::text AS cursor_at FROM email_domain_claims`;

function toClaim(row: z.infer<typeof claimRow>): EmailDomainClaim {
  return {
    domain: row.domain,
    status: row.verified_at === null ? 'pending' : 'verified',
    txtRecord: verificationRecord(row.domain, row.verification_token),
    claimedAt: row.claimed_at,
    verifiedAt: row.verified_at,
    verificationMethod: row.verification_method,
  };
}

/** One page of the employer's claims, newest first (index email_domain_claims_by_employer). */
export async function listDomainClaims(pool: DatabasePool, employerId: string, { limit, after }: { limit: number; after: Keyset | null }) {
  const rows = await pool.any(sql.type(claimRow)`
    ${selectClaims}
    WHERE employer_id = ${employerId}
      ${after ? sql.fragment`AND (claimed_at, domain) < (${after.at}::timestamptz, ${after.id})` : sql.fragment``}
    ORDER BY claimed_at DESC, domain DESC LIMIT ${limit + 1}`);
  const { page, next } = pageOf(rows, limit, (row) => ({ at: row.cursor_at, id: row.domain }));
  return { claims: page.map(toClaim), next };
}

/** The employer's claim on `domain`; 404 when it has none (whether or not another employer has one). */
export async function getDomainClaim(pool: DatabasePool, employerId: string, domain: string): Promise<EmailDomainClaim> {
  const row = await pool.maybeOne(sql.type(claimRow)`${selectClaims} WHERE employer_id = ${employerId} AND domain = ${domain}`);
  if (!row) throw notFound('The domain claim');
  return toClaim(row);
}

/** How many claims the employer holds on other domains than `exceptDomain`. */
export async function countOtherDomainClaims(pool: DatabasePool, employerId: string, exceptDomain: string): Promise<number> {
  return pool.oneFirst(sql.type(z.object({ count: z.number() }))`
    SELECT count(*)::int AS count FROM email_domain_claims WHERE employer_id = ${employerId} AND domain <> ${exceptDomain}`);
}

/** Those of `domains` that another employer than `employerId` has verified (index email_domain_claims_verified). */
export async function domainsVerifiedByOthers(pool: DatabasePool, employerId: string, domains: readonly string[]): Promise<Set<string>> {
  if (domains.length === 0) return new Set();
  const rows = await pool.anyFirst(sql.type(z.object({ domain: z.string() }))`
    SELECT domain FROM email_domain_claims
    WHERE domain = ANY(${sql.array([...domains], 'text')}) AND verified_at IS NOT NULL AND employer_id <> ${employerId}`);
  return new Set(rows);
}
