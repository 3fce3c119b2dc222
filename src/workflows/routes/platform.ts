// The internal platform API (/api/platform/v1/): how the platform's other services (clinical,
// billing) report facts about an employer. The creating POSTs honour Idempotency-Key (keys scoped to
// the employer in the path and the token), so a service retrying a submission creates nothing twice. Platform service tokens only (Authorization: Bearer), each
// route needing one family; employer credentials never open these routes. The employer is in the
// path: an unknown employer is 404; an id of another employer is 404; a patient that is not the
// employer's is 400 UNKNOWN_PATIENT.
import { instantSchema } from '../../http/instant.ts';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { AppContext } from '../../app-context.ts';
import type { PlatformPrincipal } from '../../auth/principal.ts';
import type { CommandContext } from '../../event-store/command-handler.ts';
import { defineRoute } from '../../http/route.ts';
import type { RoutePlugin } from '../../http/server.ts';
import { authorizationView, getAuthorization, getInvoice, getTaperingProposal, invoiceView, taperingProposalView, taperingStepView } from '../../../projections/workflows/queries.ts';
import { decideTapering, issueInvoice, payInvoice, proposeTapering, requestAuthorization } from '../commands.ts';
import { workflowId } from './common.ts';

const PREFIX = '/api/platform/v1/employers/:employerId';
const employerParams = z.object({ employerId: z.string().max(100) });
const patientId = z.string().min(1).max(100).meta({ description: 'A patient of this employer; another employer\'s patient is 400 UNKNOWN_PATIENT.' });
const timestamp = instantSchema.meta({ description: 'ISO 8601 with a time zone.' });
const tags = ['Platform (internal)'];
const employerNotFound = { 404: { description: 'No such employer (or no such id for this employer)' } };

/** The command context of a platform call: the employer named in the path, the token as actor. */
function platformContext(principal: PlatformPrincipal, employerId: string, requestId: string): CommandContext {
  return { tenantId: employerId, actor: { type: 'platformToken', id: principal.tokenId }, correlationId: requestId };
}

export function platformRoutes(): RoutePlugin {
  return async function platformRoutesPlugin(fastify: FastifyInstance, { ctx }: { ctx: AppContext }) {
    defineRoute(fastify, ctx, {
      method: 'POST',
      url: `${PREFIX}/authorizations`,
      summary: 'Submit a prior-authorization request for the employer to review (family authorization)',
      tags,
      auth: { platformFamily: 'authorization' },
      params: employerParams,
      idempotent: true,
      body: z.strictObject({
        patientId,
        treatment: z.string().min(1).max(200).meta({ description: 'What is to be authorized, e.g. a procedure or drug code and name.' }),
        justification: z.string().min(1).max(4000),
        requestedAt: timestamp.meta({ description: 'When the clinician requested it (ISO 8601 with a time zone).' }),
      }),
      responses: { 201: { description: 'The request, pending', schema: authorizationView }, 400: { description: 'VALIDATION_ERROR or UNKNOWN_PATIENT' }, ...employerNotFound },
      handler: async ({ params, body, principal, request, reply }) => {
        const { authorizationId } = await requestAuthorization(ctx, platformContext(principal, params.employerId, request.id), body);
        reply.status(201);
        return getAuthorization(ctx.db.slonik, params.employerId, authorizationId);
      },
    });

    defineRoute(fastify, ctx, {
      method: 'POST',
      url: `${PREFIX}/tapering-proposals`,
      summary: 'Report a tapering proposal for a patient (family tapering); emits tapering.proposed',
      tags,
      auth: { platformFamily: 'tapering' },
      params: employerParams,
      idempotent: true,
      body: z.strictObject({
        patientId,
        medication: z.string().min(1).max(200),
        schedule: z.array(taperingStepView).min(1).max(52).meta({ description: 'The steps in order of startsOn, 1 to 52.' }),
      }),
      responses: { 201: { description: 'The proposal', schema: taperingProposalView }, 400: { description: 'VALIDATION_ERROR or UNKNOWN_PATIENT' }, ...employerNotFound },
      handler: async ({ params, body, principal, request, reply }) => {
        const { proposalId } = await proposeTapering(ctx, platformContext(principal, params.employerId, request.id), body);
        reply.status(201);
        return getTaperingProposal(ctx.db.slonik, params.employerId, proposalId);
      },
    });

    defineRoute(fastify, ctx, {
      method: 'POST',
      url: `${PREFIX}/tapering-proposals/:proposalId/decision`,
      summary: 'Report the outcome of a tapering proposal (family tapering); emits tapering.approved or tapering.declined',
      description: 'proposed -> approved | declined, once: deciding a decided proposal is 409 ILLEGAL_TRANSITION.',
      tags,
      auth: { platformFamily: 'tapering' },
      params: employerParams.extend({ proposalId: workflowId }),
      body: z.strictObject({ decision: z.enum(['approved', 'declined']), reason: z.string().max(2000).optional() }),
      responses: { 200: { description: 'The proposal after the decision', schema: taperingProposalView }, 409: { description: 'ILLEGAL_TRANSITION' }, ...employerNotFound },
      handler: async ({ params, body, principal, request }) => {
        await decideTapering(ctx, platformContext(principal, params.employerId, request.id), { proposalId: params.proposalId, decision: body.decision, reason: body.reason ?? null });
        return getTaperingProposal(ctx.db.slonik, params.employerId, params.proposalId);
      },
    });

    defineRoute(fastify, ctx, {
      method: 'POST',
      url: `${PREFIX}/invoices`,
      summary: 'Report an invoice issued to the employer (family invoice)',
      tags,
      auth: { platformFamily: 'invoice' },
      params: employerParams,
      idempotent: true,
      body: z
        .strictObject({
          number: z.string().min(1).max(64).meta({ description: 'The invoice number as printed.' }),
          amountMinor: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).meta({ description: 'In the currency\'s minor unit.' }),
          currency: z.string().max(3).regex(/^[A-Z]{3}$/).meta({ description: 'ISO 4217, upper case.' }),
          period: z.strictObject({ start: z.iso.date().max(10), end: z.iso.date().max(10) }).meta({ description: 'Billing period, inclusive dates.' }),
        })
        .refine((body) => body.period.start <= body.period.end, { message: 'period.end must not be before period.start', path: ['period', 'end'] }),
      responses: { 201: { description: 'The invoice', schema: invoiceView }, ...employerNotFound },
      handler: async ({ params, body, principal, request, reply }) => {
        const { invoiceId } = await issueInvoice(ctx, platformContext(principal, params.employerId, request.id), {
          number: body.number, amountMinor: body.amountMinor, currency: body.currency, periodStart: body.period.start, periodEnd: body.period.end,
        });
        reply.status(201);
        return getInvoice(ctx.db.slonik, params.employerId, invoiceId);
      },
    });

    defineRoute(fastify, ctx, {
      method: 'POST',
      url: `${PREFIX}/invoices/:invoiceId/payments`,
      summary: 'Report an invoice paid (family invoice); emits invoice.paid',
      description: 'Once: a second payment is 409 ALREADY_PAID, whatever its paidAt.',
      tags,
      auth: { platformFamily: 'invoice' },
      params: employerParams.extend({ invoiceId: workflowId }),
      body: z.strictObject({ paidAt: timestamp }),
      responses: { 200: { description: 'The invoice, paid', schema: invoiceView }, 409: { description: 'ALREADY_PAID' }, ...employerNotFound },
      handler: async ({ params, body, principal, request }) => {
        await payInvoice(ctx, platformContext(principal, params.employerId, request.id), { invoiceId: params.invoiceId, paidAt: new Date(body.paidAt).toISOString() });
        return getInvoice(ctx.db.slonik, params.employerId, params.invoiceId);
      },
    });
  };
}
