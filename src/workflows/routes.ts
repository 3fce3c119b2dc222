// Employer routes of the platform workflows: authorization requests and tapering proposals
// (authorization:read to read, authorization:write to review), simulations (simulate:run) and
// invoices (admin session). Ids of another employer answer 404, like ids that do not exist.
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { AppContext } from '../app-context.ts';
import { commandContextOf } from '../auth/principal.ts';
import { decodeCursor, encodeCursor, LIST_PAGE, pageQuery } from '../http/page.ts';
import { defineRoute } from '../http/route.ts';
import type { RoutePlugin } from '../http/server.ts';
import {
  AUTHORIZATION_STATUSES,
  authorizationView,
  getAuthorization,
  getSimulation,
  getTaperingProposal,
  invoiceView,
  listAuthorizations,
  listInvoices,
  listTaperingProposals,
  simulationView,
  TAPERING_STATUSES,
  taperingProposalView,
} from '../../projections/workflows/queries.ts';
import { requestSimulation, reviewAuthorization } from './commands.ts';
import { RAMP_MONTHS } from './simulation.ts';

const readAuth = { modes: ['apiKey', 'session'], scope: 'authorization:read' } as const;
const writeAuth = { modes: ['apiKey', 'session'], scope: 'authorization:write' } as const;
const simulateAuth = { modes: ['apiKey', 'session'], scope: 'simulate:run' } as const;
const id = z.string().max(100);
const nextCursor = z.string().nullable().meta({ description: 'Pass as cursor for the next page; null on the last page.' });

export const simulationBody = z.strictObject({
  cohortId: z.string().min(1).max(100).optional().meta({ description: 'Simulate one cohort of the employer; omitted: all of its active patients.' }),
  months: z.number().int().min(1).max(36).meta({ description: 'Months to project, 1 to 36.' }),
  adoptionRate: z.number().min(0).max(1).meta({ description: `Share of members on a tapering plan once adoption has ramped up (after ${RAMP_MONTHS} months), 0 to 1.` }),
  baselineMonthlyCostMinor: z.number().int().min(0).max(100_000_000).meta({ description: 'Monthly cost per member without tapering, in minor units.' }),
  taperedMonthlyCostMinor: z.number().int().min(0).max(100_000_000).meta({ description: 'Monthly cost per member on a tapering plan, in minor units (may exceed the baseline: savings are then negative).' }),
  currency: z.string().max(3).regex(/^[A-Z]{3}$/).meta({ description: 'ISO 4217 code, upper case; the figures are not converted.' }),
});

export function workflowRoutes(): RoutePlugin {
  return async function workflowRoutesPlugin(fastify: FastifyInstance, { ctx }: { ctx: AppContext }) {
    defineRoute(fastify, ctx, {
      method: 'GET',
      url: '/api/employer/authorizations',
      summary: 'List prior-authorization requests, newest first',
      description: 'Requests the platform submitted for patients of the employer. Filter by status; cursor-paged.',
      tags: ['Authorizations'],
      auth: readAuth,
      querystring: pageQuery(LIST_PAGE).extend({ status: z.enum(AUTHORIZATION_STATUSES).optional() }),
      responses: { 200: { description: 'One page', schema: z.object({ authorizations: z.array(authorizationView), nextCursor }).meta({ id: 'AuthorizationList' }) } },
      handler: async ({ query, principal }) => {
        const { authorizations, next } = await listAuthorizations(ctx.db.slonik, principal.employerId, { limit: query.limit, after: decodeCursor(query.cursor), status: query.status });
        return { authorizations, nextCursor: encodeCursor(next) };
      },
    });

    defineRoute(fastify, ctx, {
      method: 'GET',
      url: '/api/employer/authorizations/:authorizationId',
      summary: 'One prior-authorization request',
      tags: ['Authorizations'],
      auth: readAuth,
      params: z.object({ authorizationId: id }),
      responses: { 200: { description: 'The request', schema: authorizationView }, 404: { description: 'No such request for this employer' } },
      handler: async ({ params, principal }) => getAuthorization(ctx.db.slonik, principal.employerId, params.authorizationId),
    });

    defineRoute(fastify, ctx, {
      method: 'POST',
      url: '/api/employer/authorizations/:authorizationId/review',
      summary: 'Approve or deny a prior-authorization request (once)',
      description:
        'A request is reviewed once: a second review, whatever its decision, is 409 ALREADY_REVIEWED. Emits `authorization.reviewed`. ' +
        'Not idempotent by key: the one-review rule makes a retry harmless (it gets 409 and the first review stands).',
      tags: ['Authorizations'],
      auth: writeAuth,
      params: z.object({ authorizationId: id }),
      body: z.strictObject({
        decision: z.enum(['approved', 'denied']),
        note: z.string().max(2000).optional().meta({ description: 'Shown to the platform and in the webhook; no personal data, please.' }),
      }),
      responses: {
        200: { description: 'The reviewed request', schema: authorizationView },
        404: { description: 'No such request for this employer' },
        409: { description: 'ALREADY_REVIEWED' },
      },
      handler: async ({ params, body, principal, request }) => {
        await reviewAuthorization(ctx, commandContextOf(principal, request.id), { authorizationId: params.authorizationId, decision: body.decision, note: body.note ?? null });
        return getAuthorization(ctx.db.slonik, principal.employerId, params.authorizationId);
      },
    });

    defineRoute(fastify, ctx, {
      method: 'GET',
      url: '/api/employer/tapering-proposals',
      summary: 'List tapering proposals, newest first',
      description: 'Plans the platform proposed to reduce a patient\'s medication, and their outcome. Filter by status; cursor-paged.',
      tags: ['Tapering'],
      auth: readAuth,
      querystring: pageQuery(LIST_PAGE).extend({ status: z.enum(TAPERING_STATUSES).optional() }),
      responses: { 200: { description: 'One page', schema: z.object({ taperingProposals: z.array(taperingProposalView), nextCursor }).meta({ id: 'TaperingProposalList' }) } },
      handler: async ({ query, principal }) => {
        const { taperingProposals, next } = await listTaperingProposals(ctx.db.slonik, principal.employerId, { limit: query.limit, after: decodeCursor(query.cursor), status: query.status });
        return { taperingProposals, nextCursor: encodeCursor(next) };
      },
    });

    defineRoute(fastify, ctx, {
      method: 'GET',
      url: '/api/employer/tapering-proposals/:proposalId',
      summary: 'One tapering proposal',
      tags: ['Tapering'],
      auth: readAuth,
      params: z.object({ proposalId: id }),
      responses: { 200: { description: 'The proposal', schema: taperingProposalView }, 404: { description: 'No such proposal for this employer' } },
      handler: async ({ params, principal }) => getTaperingProposal(ctx.db.slonik, principal.employerId, params.proposalId),
    });

    defineRoute(fastify, ctx, {
      method: 'POST',
      url: '/api/employer/simulations',
      summary: 'Run a cost projection of the tapering programme (asynchronous)',
      description:
        'Answers 202 at once; a worker job counts the members (the employer\'s active patients, or the cohort\'s) and computes the projection, then emits ' +
        '`simulation.completed`. Poll GET /api/employer/simulations/{id}. The projection is deterministic, integers in minor units: participants ramp ' +
        `linearly to adoptionRate of members over the first min(${RAMP_MONTHS}, months) months (month m: floor(members x adoptionRate x min(m, ramp) / ramp)); ` +
        'each month baselineCost = members x baselineMonthlyCostMinor, projectedCost = (members - participants) x baselineMonthlyCostMinor + participants x ' +
        'taperedMonthlyCostMinor, savings = baselineCost - projectedCost; totals sum the months. A cohort the employer does not have counts 0 members. ' +
        `An employer may have ${ctx.config.SIMULATION_MAX_IN_FLIGHT} simulations queued or running at once (SIMULATION_MAX_IN_FLIGHT); another is 429 ` +
        'TOO_MANY_SIMULATIONS_IN_FLIGHT with Retry-After, and changes nothing.',
      tags: ['Simulations'],
      auth: simulateAuth,
      body: simulationBody,
      idempotent: true,
      responses: { 202: { description: 'The simulation, running; Location names it', schema: simulationView }, 429: { description: 'TOO_MANY_SIMULATIONS_IN_FLIGHT' } },
      handler: async ({ body, principal, request, reply }) => {
        const { simulationId } = await requestSimulation(ctx, commandContextOf(principal, request.id), { ...body, cohortId: body.cohortId ?? null });
        reply.status(202).header('location', `/api/employer/simulations/${simulationId}`);
        return getSimulation(ctx.db.slonik, principal.employerId, simulationId);
      },
    });

    defineRoute(fastify, ctx, {
      method: 'GET',
      url: '/api/employer/simulations/:simulationId',
      summary: 'A simulation: its status and, once completed, month-by-month results and totals',
      tags: ['Simulations'],
      auth: simulateAuth,
      params: z.object({ simulationId: id }),
      responses: { 200: { description: 'The simulation', schema: simulationView }, 404: { description: 'No such simulation for this employer' } },
      handler: async ({ params, principal }) => getSimulation(ctx.db.slonik, principal.employerId, params.simulationId),
    });

    defineRoute(fastify, ctx, {
      method: 'GET',
      url: '/api/employer/invoices',
      summary: 'List the employer\'s invoices, newest first (admin session)',
      description: 'Browser session of an EMPLOYER_ADMIN only: billing is not a scope API keys can hold.',
      tags: ['Invoices'],
      auth: { modes: ['session'], role: 'EMPLOYER_ADMIN' },
      querystring: pageQuery(LIST_PAGE).extend({ status: z.enum(['issued', 'paid']).optional() }),
      responses: { 200: { description: 'One page', schema: z.object({ invoices: z.array(invoiceView), nextCursor }).meta({ id: 'InvoiceList' }) } },
      handler: async ({ query, principal }) => {
        const { invoices, next } = await listInvoices(ctx.db.slonik, principal.employerId, { limit: query.limit, after: decodeCursor(query.cursor), status: query.status });
        return { invoices, nextCursor: encodeCursor(next) };
      },
    });
  };
}
