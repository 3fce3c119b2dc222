// The scheduled operational jobs (spec 4.7), run hourly / monthly by graphile-worker's crontab and on
// demand by GET /api/cron/*. Each records its finding as an event (audit entry through the audit
// mappers) in a stream per employer and period, so running twice records once; e-mails follow from
// those events as worker jobs (./tasks.ts), so a failing mail server never holds back the record.
import type { AppContext } from '../app-context.ts';
import { handleCommand, type CommandContext } from '../event-store/command-handler.ts';
import { tenantStream } from '../event-store/port.ts';
import type { InventoryReviewData, IpRejectionAlertData } from './events.ts';
import { activeKeysOf } from '../../projections/api-keys/queries.ts';
import { allEmployerIds } from '../../projections/tenants/queries.ts';
import { ipRejectionsBetween } from './queries.ts';
import { recordOnceDecider } from '../event-store/record-once.ts';

const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;

const systemContext = (employerId: string, job: string): CommandContext => ({ tenantId: employerId, actor: { type: 'system', id: job } });

export type IntegrationAlertsSummary = {
  job: 'integration-alerts';
  windowStart: string;
  windowEnd: string;
  threshold: number;
  employersWithRejections: number;
  alerts: Array<{ employerId: string; rejections: number; recorded: boolean }>;
};

/**
 * Per employer, the API_KEY_IP_NOT_ALLOWED rejections of the last hour; at INTEGRATION_ALERT_IP_REJECTIONS_THRESHOLD
 * or more, an `IntegrationAlertRaised` for the current UTC hour (once: `recorded` is false when that
 * hour's alert already exists).
 */
export async function runIntegrationAlerts(ctx: AppContext, now: Date): Promise<IntegrationAlertsSummary> {
  // This process's counts from the last seconds first (they are written every 5 s).
  await ctx.auth.apiKeys.flush();
  const windowStart = new Date(now.getTime() - HOUR_MS);
  const threshold = ctx.config.INTEGRATION_ALERT_IP_REJECTIONS_THRESHOLD;
  const byEmployer = Map.groupBy(await ipRejectionsBetween(ctx.db.slonik, windowStart, now), (row) => row.employer_id);
  const hour = now.toISOString().slice(0, 13);
  const alerts: IntegrationAlertsSummary['alerts'] = [];
  for (const [employerId, rows] of byEmployer) {
    const rejections = rows.reduce((sum, row) => sum + row.rejections, 0);
    if (rejections < threshold) continue;
    const data: IpRejectionAlertData = {
      hour,
      windowStart: windowStart.toISOString(),
      windowEnd: now.toISOString(),
      threshold,
      rejections,
      sources: rows.map((row) => ({ keyId: row.key_id, keyName: row.key_name, ip: row.ip, rejections: row.rejections })),
    };
    const { newEvents } = await handleCommand(ctx.commands, {
      streamName: tenantStream(employerId, 'integrationAlert', hour.replace(/[-T]/g, '')),
      decider: recordOnceDecider,
      command: { record: { type: 'IntegrationAlertRaised', data } },
      context: systemContext(employerId, 'integration-alerts'),
    });
    alerts.push({ employerId, rejections, recorded: newEvents.length > 0 });
  }
  return { job: 'integration-alerts', windowStart: windowStart.toISOString(), windowEnd: now.toISOString(), threshold, employersWithRejections: byEmployer.size, alerts };
}

export type InventoryReviewSummary = {
  job: 'api-key-inventory-review';
  month: string;
  employersReviewed: number;
  reviews: Array<{ employerId: string; activeKeys: number; countOutOfBounds: 'below' | 'above' | null; staleKeys: number; expiringKeys: number; flagged: boolean; recorded: boolean }>;
};

/**
 * Per employer, once per UTC month: the active key count against API_KEY_INVENTORY_EXPECTED_MIN/MAX,
 * keys unused for API_KEY_STALE_DAYS (never used counts from creation), keys expiring within
 * API_KEY_EXPIRING_DAYS; an `ApiKeyInventoryReviewed` for every employer, flagged when any of these hold.
 */
export async function runInventoryReview(ctx: AppContext, now: Date): Promise<InventoryReviewSummary> {
  const { API_KEY_INVENTORY_EXPECTED_MIN: expectedMin, API_KEY_INVENTORY_EXPECTED_MAX: expectedMax, API_KEY_STALE_DAYS: staleDays, API_KEY_EXPIRING_DAYS: expiringDays } = ctx.config;
  const month = now.toISOString().slice(0, 7);
  const staleBefore = now.getTime() - staleDays * DAY_MS;
  const expiringBefore = now.getTime() + expiringDays * DAY_MS;
  const reviews: InventoryReviewSummary['reviews'] = [];
  for (const employerId of await allEmployerIds(ctx.db.slonik)) {
    const keys = await activeKeysOf(ctx.db.slonik, employerId, now);
    const flaggedKey = (key: (typeof keys)[number]) => ({ keyId: key.id, name: key.name, lastUsedAt: key.last_used_at, expiresAt: key.expires_at });
    const staleKeys = keys.filter((key) => Date.parse(key.last_used_at ?? key.created_at) < staleBefore).map(flaggedKey);
    const expiringKeys = keys.filter((key) => key.expires_at !== null && Date.parse(key.expires_at) <= expiringBefore).map(flaggedKey);
    const countOutOfBounds = keys.length < expectedMin ? 'below' : keys.length > expectedMax ? 'above' : null;
    const flagged = countOutOfBounds !== null || staleKeys.length > 0 || expiringKeys.length > 0;
    const data: InventoryReviewData = { month, activeKeys: keys.length, expectedMin, expectedMax, countOutOfBounds, staleDays, expiringDays, staleKeys, expiringKeys, flagged };
    const { newEvents } = await handleCommand(ctx.commands, {
      streamName: tenantStream(employerId, 'apiKeyInventoryReview', month.replace('-', '')),
      decider: recordOnceDecider,
      command: { record: { type: 'ApiKeyInventoryReviewed', data } },
      context: systemContext(employerId, 'api-key-inventory-review'),
    });
    reviews.push({ employerId, activeKeys: keys.length, countOutOfBounds, staleKeys: staleKeys.length, expiringKeys: expiringKeys.length, flagged, recorded: newEvents.length > 0 });
  }
  return { job: 'api-key-inventory-review', month, employersReviewed: reviews.length, reviews };
}
