// The employer's invoices, as the platform's billing issued them: an administrator's session only.
import { z } from 'zod';
import { decodeCursor, encodeCursor, LIST_PAGE, pageQuery } from '../../http/page.ts';
import { defineRoute } from '../../http/route.ts';
import type { RoutePlugin } from '../../http/server.ts';
import { invoiceView, listInvoices } from '../../../projections/workflows/queries.ts';
import { nextCursor } from './common.ts';

export function invoiceRoutes(): RoutePlugin {
  return async (fastify, { ctx }) => {
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
