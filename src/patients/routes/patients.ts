// Employer routes of patients (SPEC 4.2): the roster, and erasure of a patient's personal data.
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { AppContext } from '../../app-context.ts';
import { commandContextOf } from '../../auth/principal.ts';
import { emailBlindIndex } from '../../crypto/personal-data.ts';
import { decodeCursor, encodeCursor, LIST_PAGE, pageQuery } from '../../http/page.ts';
import { defineRoute } from '../../http/route.ts';
import type { RoutePlugin } from '../../http/server.ts';
import { listRoster, rosterPatient } from '../../../projections/patients/queries.ts';
import { erasePatient } from '../commands.ts';

const tags = ['Patients'];

export function patientRoutes(): RoutePlugin {
  return async function patientRoutesPlugin(fastify: FastifyInstance, { ctx }: { ctx: AppContext }) {
    const readAuth = { modes: ['apiKey', 'session'], scope: 'cohort:read' } as const;

    defineRoute(fastify, ctx, {
      method: 'GET',
      url: '/api/employer/patients',
      summary: 'The roster: patients of the employer, newest first (erased patients are not listed)',
      tags,
      auth: readAuth,
      querystring: pageQuery(LIST_PAGE).extend({
        search: z.string().trim().min(1).max(254).optional().meta({
          description: 'Only patients whose e-mail is this address (when it holds an @; case-insensitive), or whose first or last name starts with it (case-insensitive).',
        }),
      }),
      responses: { 200: { description: 'One page of patients', schema: z.object({ patients: z.array(rosterPatient), nextCursor: z.string().nullable() }) } },
      handler: async ({ query, principal }) => {
        const { employerId } = principal;
        const search = query.search === undefined ? undefined
          : query.search.includes('@') ? { emailIndex: emailBlindIndex(ctx.encryptionKey, employerId, query.search) }
          : { namePrefix: query.search };
        const { patients, next } = await listRoster(ctx.db.slonik, employerId, { limit: query.limit, after: decodeCursor(query.cursor), search });
        return { patients, nextCursor: encodeCursor(next) };
      },
    });

    defineRoute(fastify, ctx, {
      method: 'DELETE',
      url: '/api/employer/patients/:patientId/personal-data',
      summary: "Erase a patient's personal data (crypto-shredding)",
      description:
        "Destroys the patient's data key, so every personal and health field of the patient's events (sealed under it) is unreadable from then on, " +
        'and appends PatientErased (which holds no personal data). The read models drop the data; FHIR answers 410 for the patient and its resources. Repeating it answers the same.',
      tags,
      auth: { modes: ['session'], role: 'EMPLOYER_ADMIN' },
      params: z.object({ patientId: z.string().max(64).meta({ description: 'The FHIR Patient id' }) }),
      responses: { 200: { description: 'Erased', schema: z.object({ patientId: z.string(), erasedAt: z.string() }) } },
      handler: async ({ params, principal, request }) => erasePatient(ctx, commandContextOf(principal, request.id), { patientId: params.patientId }),
    });
  };
}
