// FHIR R4 under /api/fhir (SPEC 4.4), one file per interaction in the manner of Medplum: metadata
// (metadata.ts), and for each resource type search (search.ts: GET and POST _search), read (read.ts),
// vread (vread.ts), create (create.ts: conditional with If-None-Exist), update (update.ts: If-Match
// against the stream revision), delete (delete.ts) and history (history.ts); batch and transaction
// Bundles (bundle.ts); Patient/{id}/$everything (everything.ts). FHIR_INTERACTIONS lists them: each
// defines its routes and says what it adds to the CapabilityStatement. JSON only (application/fhir+json,
// application/json, _format=json): XML is 406 (Accept) or 415 (Content-Type). Errors are
// OperationOutcomes (outcome.ts). 120 requests a minute per employer (a bundle's entries each count).
// A PATIENT session reads only its own compartment (compartment.ts).
import type { FastifyReply } from 'fastify';
import type { Principal } from '../../auth/principal.ts';
import { defineRoute } from '../../http/route.ts';
import { acceptJson, type RoutePlugin } from '../../http/server.ts';
import { assertAllowed, clientAddressKey, createTokenBuckets } from '../../http/token-buckets.ts';
import { FHIR_JSON_VALUES_MAX } from '../../http/limits.ts';
import { bulkDataStatement } from '../../exports/bulk-data.ts';
import { bundleInteraction } from './bundle.ts';
import { createInteraction } from './create.ts';
import { deleteInteraction } from './delete.ts';
import { everythingInteraction } from './everything.ts';
import { historyInteraction } from './history.ts';
import { FHIR_PATH, type FhirApi, type FhirInteraction, type FhirRoute } from './interaction.ts';
import { metadataInteraction } from './metadata.ts';
import { FHIR_CONTENT_TYPE, fhirError, fhirErrorShape } from './outcome.ts';
import { readInteraction } from './read.ts';
import { searchInteraction } from './search.ts';
import { updateInteraction } from './update.ts';
import { loadFhirDefinitions } from './validate.ts';
import { vreadInteraction } from './vread.ts';

const tags = ['FHIR'];

const FHIR_INTERACTIONS: FhirInteraction[] = [
  metadataInteraction, searchInteraction, readInteraction, vreadInteraction, createInteraction, updateInteraction, deleteInteraction, historyInteraction, bundleInteraction, everythingInteraction,
];
/** The CapabilityStatement's parts: the interactions', and Bulk Data's $export (the exports capability serves it). */
const STATEMENT = [...FHIR_INTERACTIONS.map((interaction) => interaction.statement), bulkDataStatement];
const JSON_FORMATS = new Set(['json', 'application/json', 'application/fhir+json']);

const acceptsJson = (accept: string) =>
  accept.split(',').some((range) => {
    const type = range.split(';')[0]!.trim().toLowerCase();
    return type === '*/*' || type === 'application/*' || type.endsWith('json');
  });

export function fhirRoutes(): RoutePlugin {
  return async (fastify, { ctx }) => {
    // Errors raised before a route is found (a path that does not decode, headers over the limit) too.
    fastify.errorShapesByPrefix.set(FHIR_PATH, fhirErrorShape);
    // The R4 definitions are indexed once, when the API starts (not in other roles, nor in the CLI).
    await loadFhirDefinitions();
    const limit = ctx.config.FHIR_RATE_LIMIT_PER_MIN;
    const buckets = createTokenBuckets({ perSecond: limit / 60, burst: limit });

    acceptJson(fastify, FHIR_CONTENT_TYPE);
    fastify.addHook('onRequest', async (request) => {
      const format = (request.query as Record<string, unknown>)._format;
      if (format !== undefined && !(typeof format === 'string' && JSON_FORMATS.has(format))) throw fhirError('not_acceptable', 'Only JSON is supported: _format=json.');
      const accept = request.headers.accept;
      if (accept && !acceptsJson(accept)) throw fhirError('not_acceptable', `Only ${FHIR_CONTENT_TYPE} (or application/json) is supported; Accept was ${accept}.`);
    });

    /** Takes `requests` of the bucket `key` (an employer, or an anonymous caller's address); 429 when spent. */
    const spend = (key: string, of: 'employer' | 'address', reply: FastifyReply, requests: number) => {
      for (let spent = 0; spent < requests; spent++) assertAllowed(buckets.take(key), reply, `More than ${limit} FHIR requests a minute for this ${of}`);
    };
    const spendRequests: FhirApi['spendRequests'] = (employerId, reply, requests) => spend(employerId, 'employer', reply, requests);
    const route: FhirRoute = (definition) =>
      defineRoute(fastify, ctx, {
        ...definition,
        url: `${FHIR_PATH}${definition.url}`,
        ...(definition.aliases ? { aliases: definition.aliases.map((alias) => `${FHIR_PATH}${alias}`) } : {}),
        tags,
        errorShape: fhirErrorShape,
        bodyBudget: { values: FHIR_JSON_VALUES_MAX },
        handler: async (input) => {
          // Anonymous calls (metadata) count against their address.
          const principal = input.principal as Principal | null;
          if (principal) spendRequests(principal.employerId, input.reply, 1);
          else spend(clientAddressKey(input.request.ip), 'address', input.reply, 1);
          input.reply.type(FHIR_CONTENT_TYPE);
          return definition.handler(input);
        },
      });

    const api: FhirApi = { ctx, route, spendRequests, base: `${ctx.config.PUBLIC_BASE_URL}${FHIR_PATH}`, statement: STATEMENT };
    for (const interaction of FHIR_INTERACTIONS) interaction.routes(api);
  };
}
