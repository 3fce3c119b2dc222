// GET /api/cron/* for an external scheduler (the service also runs the same jobs on its own crontab):
// `Authorization: Bearer $CRON_SECRET`, compared in constant time; 503 while CRON_SECRET is unset.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { AppContext } from '../app-context.ts';
import { hashesEqual, sha256Hex } from '../crypto/tokens.ts';
import { DomainError } from '../event-store/decider.ts';
import { defineRoute } from '../http/route.ts';
import type { RoutePlugin } from '../http/server.ts';
import { runIntegrationAlerts, runInventoryReview } from './jobs.ts';

function assertCronCaller(ctx: AppContext, request: FastifyRequest): void {
  const secret = ctx.config.CRON_SECRET;
  if (!secret) throw new DomainError('unavailable', 'CRON_NOT_CONFIGURED', 'CRON_SECRET is not set on the server, so the cron endpoints are off (the jobs still run on the service\'s own schedule).');
  const match = /^Bearer (.+)$/.exec(request.headers.authorization ?? '');
  // Hashes of equal length, so the comparison's time says nothing about the secret.
  if (!match || !hashesEqual(sha256Hex(match[1]!), sha256Hex(secret))) {
    throw new DomainError('unauthenticated', 'UNAUTHORIZED', 'The cron endpoints need Authorization: Bearer <CRON_SECRET>.');
  }
}

const alertsSummary = z
  .object({
    job: z.literal('integration-alerts'),
    windowStart: z.string(),
    windowEnd: z.string(),
    threshold: z.number().int(),
    employersWithRejections: z.number().int(),
    alerts: z.array(z.object({ employerId: z.string(), rejections: z.number().int(), recorded: z.boolean().meta({ description: 'false: this hour\'s alert was recorded by an earlier run' }) })),
  })
  .meta({ id: 'IntegrationAlertsSummary' });

const reviewSummary = z
  .object({
    job: z.literal('api-key-inventory-review'),
    month: z.string(),
    employersReviewed: z.number().int(),
    reviews: z.array(z.object({
      employerId: z.string(),
      activeKeys: z.number().int(),
      countOutOfBounds: z.enum(['below', 'above']).nullable(),
      staleKeys: z.number().int(),
      expiringKeys: z.number().int(),
      flagged: z.boolean(),
      recorded: z.boolean().meta({ description: "false: this month's review was recorded by an earlier run" }),
    })),
  })
  .meta({ id: 'ApiKeyInventoryReviewSummary' });

/** The cron secret, checked by each handler (assertCronCaller): 503 while it is unset, which the pipeline could not say. */
const cronAuth = { checkedByRoute: 'cronSecret' } as const;
const notConfigured = { description: 'CRON_SECRET is not set' };

export function cronRoutes(): RoutePlugin {
  return async function cronRoutesPlugin(fastify: FastifyInstance, { ctx }: { ctx: AppContext }) {
    defineRoute(fastify, ctx, {
      method: 'GET',
      url: '/api/cron/integration-alerts',
      summary: 'Hourly: alert employers about API key calls refused for their address',
      description: 'Counts API_KEY_IP_NOT_ALLOWED rejections per employer over the last hour; at INTEGRATION_ALERT_IP_REJECTIONS_THRESHOLD or more records `integration.alert.ip_rejections` and e-mails the admins, once per employer and hour.',
      tags: ['Operations'],
      auth: cronAuth,
      responses: { 200: { description: 'What was found and recorded', schema: alertsSummary }, 503: notConfigured },
      handler: async ({ request }) => {
        assertCronCaller(ctx, request);
        return runIntegrationAlerts(ctx, new Date());
      },
    });
    defineRoute(fastify, ctx, {
      method: 'GET',
      url: '/api/cron/api-key-inventory-review',
      summary: 'Monthly: review each employer\'s API keys',
      description: 'Compares active keys with API_KEY_INVENTORY_EXPECTED_MIN/MAX, flags keys unused for API_KEY_STALE_DAYS and keys expiring within API_KEY_EXPIRING_DAYS, records `api_key.inventory_review` per employer once a month and e-mails the admins when something is flagged.',
      tags: ['Operations'],
      auth: cronAuth,
      responses: { 200: { description: 'What was found and recorded', schema: reviewSummary }, 503: notConfigured },
      handler: async ({ request }) => {
        assertCronCaller(ctx, request);
        return runInventoryReview(ctx, new Date());
      },
    });
  };
}
