// E-mail domain management: browser session of an EMPLOYER_ADMIN only (an x-api-key caller gets 403
// SESSION_REQUIRED, another role 403 FORBIDDEN_ROLE). A domain this employer has not claimed is 404,
// whether or not another employer claimed it.
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { AppContext } from '../app-context.ts';
import { commandContextOf } from '../auth/principal.ts';
import { decodeCursor, encodeCursor, LIST_PAGE, pageQuery } from '../http/page.ts';
import { defineRoute } from '../http/route.ts';
import type { RoutePlugin } from '../http/server.ts';
import { emailDomainClaim, getDomainClaim, listDomainClaims } from '../../projections/email-domains/queries.ts';
import { claimDomain, MAX_DOMAIN_CLAIMS, verifyDomainByDns, withdrawDomainClaim } from './commands.ts';
import { createTxtLookup } from './dns-verification.ts';
import { DOMAIN_MAX, normalizeDomain } from './domain-name.ts';

const auth = { modes: ['session'], role: 'EMPLOYER_ADMIN' } as const;
const tags = ['E-mail domains'];
const URL = '/api/employer/email-domains';

/** A domain name as typed (Unicode or punycode, any case, a final dot or not), normalised. */
const domainName = z
  .string()
  .max(DOMAIN_MAX + 1)
  .transform((text, context) => {
    const domain = normalizeDomain(text);
    if (domain !== null) return domain;
    context.addIssue({ code: 'custom', message: 'must be a domain name such as example.com' });
    return z.NEVER;
  });

const domainParams = z.object({ domain: domainName });

const listResponse = z.object({ domains: z.array(emailDomainClaim), nextCursor: z.string().nullable() }).meta({ id: 'EmailDomainClaimList' });

const WHAT_A_CLAIM_DOES =
  'Once verified, new e-mail addresses in the domain (SCIM users, SAML just-in-time users, cohort rows, FHIR Patients, the admin of a new employer) ' +
  'can be taken up by this employer only; any other employer is refused exactly as for an address already in use (409, the same body, naming no employer). ' +
  'Addresses another employer held before the verification stay where they are. A claim covers the domain itself, not its subdomains. ' +
  'One employer at most holds a verified claim on a domain: other employers\' claims on it stay pending, protect nothing, and cannot be verified ' +
  'until the holder withdraws its claim.';

export function emailDomainRoutes(): RoutePlugin {
  return async function emailDomainRoutesPlugin(fastify: FastifyInstance, { ctx }: { ctx: AppContext }) {
    const lookupTxt = createTxtLookup({ servers: ctx.config.EMAIL_DOMAIN_DNS_SERVERS, timeoutMs: ctx.config.EMAIL_DOMAIN_DNS_TIMEOUT_MS });

    defineRoute(fastify, ctx, {
      method: 'GET',
      url: URL,
      summary: 'The e-mail domains the employer has claimed, pending or verified',
      description: WHAT_A_CLAIM_DOES,
      tags,
      auth,
      querystring: pageQuery(LIST_PAGE),
      responses: { 200: { description: 'One page of claims, newest first; pass nextCursor as cursor for the next (null on the last page)', schema: listResponse } },
      handler: async ({ query, principal }) => {
        const { claims, next } = await listDomainClaims(ctx.db.slonik, principal.employerId, { limit: query.limit, after: decodeCursor(query.cursor, z.string().max(DOMAIN_MAX)) });
        return { domains: claims, nextCursor: encodeCursor(next) };
      },
    });

    defineRoute(fastify, ctx, {
      method: 'POST',
      url: URL,
      summary: 'Claim an e-mail domain: returns the DNS TXT record to publish before verifying',
      description:
        `Claiming a domain the employer has claimed already answers 200 with that claim as it is (its record unchanged). 409 DOMAIN_TAKEN while another employer holds a verified claim on it; ` +
        `409 TOO_MANY_DOMAIN_CLAIMS past ${MAX_DOMAIN_CLAIMS} claims. A pending claim protects nothing. ${WHAT_A_CLAIM_DOES}`,
      tags,
      auth,
      body: z.strictObject({ domain: domainName }),
      responses: {
        201: { description: 'The new claim, pending, with the TXT record to publish', schema: emailDomainClaim },
        200: { description: 'The employer had claimed the domain already', schema: emailDomainClaim },
        409: { description: 'DOMAIN_TAKEN or TOO_MANY_DOMAIN_CLAIMS' },
      },
      handler: async ({ body, principal, request, reply }) => {
        const { created } = await claimDomain(ctx, commandContextOf(principal, request.id), { domain: body.domain });
        reply.status(created ? 201 : 200);
        return getDomainClaim(ctx.db.slonik, principal.employerId, body.domain);
      },
    });

    defineRoute(fastify, ctx, {
      method: 'POST',
      url: `${URL}/:domain/verify`,
      summary: 'Verify a claimed e-mail domain by its DNS TXT record',
      description:
        `Looks up the claim's txtRecord (within EMAIL_DOMAIN_DNS_TIMEOUT_MS) and verifies the claim when one of the name's TXT records has its value. ` +
        '422 DOMAIN_NOT_VERIFIED with reason record_not_found (and the txtRecord to publish) or lookup_failed (no answer, or a failure; which one is not told). ' +
        'Verifying a verified claim answers 200 and looks nothing up. 409 DOMAIN_TAKEN while another employer holds a verified claim on the domain. ' +
        'An operator can verify a claim without DNS: `npm run cli -- domains verify --tenant <employerId> --domain <domain>`.',
      tags,
      auth,
      params: domainParams,
      responses: {
        200: { description: 'The claim, verified', schema: emailDomainClaim },
        404: { description: 'The employer has not claimed this domain' },
        409: { description: 'DOMAIN_TAKEN' },
        422: { description: 'DOMAIN_NOT_VERIFIED' },
      },
      handler: async ({ params, principal, request }) => {
        await verifyDomainByDns(ctx, lookupTxt, commandContextOf(principal, request.id), { domain: params.domain });
        return getDomainClaim(ctx.db.slonik, principal.employerId, params.domain);
      },
    });

    defineRoute(fastify, ctx, {
      method: 'DELETE',
      url: `${URL}/:domain`,
      summary: 'Withdraw a claim on an e-mail domain',
      description: 'A verified claim stops protecting the domain at once: its addresses can be taken up by any employer again, and another employer may verify its claim. Addresses already held stay where they are.',
      tags,
      auth,
      params: domainParams,
      responses: { 204: { description: 'Withdrawn' }, 404: { description: 'The employer has not claimed this domain' } },
      handler: async ({ params, principal, request, reply }) => {
        await withdrawDomainClaim(ctx, commandContextOf(principal, request.id), { domain: params.domain });
        return reply.status(204).send();
      },
    });
  };
}
