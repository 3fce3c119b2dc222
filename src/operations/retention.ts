// The daily retention job: deletes operational rows past their configured age, a batch per statement
// (each its own short transaction, so no long lock and no long-held snapshot), and reports how many
// rows of each table went. Events and the audit chain are never pruned: they are the record.
//
// `sessions` and `signin_tokens` are the identity projection's tables: a rebuild replays their events
// and brings the expired rows back, harmlessly (an expired session or token is refused all the same),
// until the next run prunes them again.
import { sql, type DatabasePool, type FragmentSqlToken } from 'slonik';
import type { AppContext } from '../app-context.ts';
import type { Config } from '../config.ts';

export type RetentionAges = Pick<Config, 'RETENTION_WEBHOOK_LOG_DAYS' | 'RETENTION_SESSIONS_DAYS' | 'RETENTION_SCIM_REQUESTS_DAYS'>;

/** Rows pruned per table in one run: what a metrics registry counts (a `prune` counter labelled by table). */
export type PrunedCounts = Record<string, number>;

type Rule = { table: string; due: (ages: RetentionAges) => FragmentSqlToken };

const olderThanDays = (column: string, days: number) => sql.fragment`${sql.identifier([column])} < now() - make_interval(days => ${days})`;

/** What each table keeps, in the order pruned (attempts before the deliveries they belong to). */
const RULES: Rule[] = [
  { table: 'webhook_delivery_attempts', due: (ages) => olderThanDays('requested_at', ages.RETENTION_WEBHOOK_LOG_DAYS) },
  // A delivery still pending (retrying, or queued by a recovery) stays, and so does one with attempts left.
  {
    table: 'webhook_deliveries',
    due: (ages) => sql.fragment`${olderThanDays('created_at', ages.RETENTION_WEBHOOK_LOG_DAYS)} AND status <> 'pending'
      AND NOT EXISTS (SELECT 1 FROM webhook_delivery_attempts a WHERE a.delivery_id = webhook_deliveries.delivery_id)`,
  },
  {
    table: 'webhook_recoveries',
    due: (ages) => sql.fragment`${olderThanDays('requested_at', ages.RETENTION_WEBHOOK_LOG_DAYS)}
      AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.recovery_id = webhook_recoveries.recovery_id AND d.status = 'pending')`,
  },
  { table: 'sessions', due: (ages) => sql.fragment`${olderThanDays('expires_at', ages.RETENTION_SESSIONS_DAYS)} OR ${olderThanDays('ended_at', ages.RETENTION_SESSIONS_DAYS)}` },
  { table: 'signin_tokens', due: (ages) => olderThanDays('expires_at', ages.RETENTION_SESSIONS_DAYS) },
  // Kept until they expire (24 hours for idempotency keys, minutes for the SAML and SMART ones), then gone.
  { table: 'idempotency_keys', due: () => sql.fragment`expires_at <= now()` },
  { table: 'saml_requests', due: () => sql.fragment`expires_at < now()` },
  { table: 'saml_assertions', due: () => sql.fragment`expires_at < now()` },
  { table: 'smart_assertion_jtis', due: () => sql.fragment`expires_at < now()` },
  { table: 'smart_access_tokens', due: () => sql.fragment`expires_at < now()` },
  { table: 'scim_request_log', due: (ages) => olderThanDays('received_at', ages.RETENTION_SCIM_REQUESTS_DAYS) },
];

/** Rows deleted per statement. */
export const RETENTION_BATCH_SIZE = 1000;

/** Prunes every table of RULES; returns the rows deleted per table (each table listed, 0 included). */
export async function pruneOperationalRows(pool: DatabasePool, ages: RetentionAges, batchSize = RETENTION_BATCH_SIZE): Promise<PrunedCounts> {
  const counts: PrunedCounts = {};
  for (const rule of RULES) {
    const table = sql.identifier([rule.table]);
    const due = rule.due(ages);
    let pruned = 0;
    for (;;) {
      // The condition again outside the sub-select: a row changed meanwhile is checked as it is now.
      const { rowCount } = await pool.query(sql.unsafe`
        DELETE FROM ${table} WHERE ctid = ANY(ARRAY(SELECT ctid FROM ${table} WHERE ${due} LIMIT ${batchSize})) AND (${due})`);
      pruned += rowCount;
      if (rowCount < batchSize) break;
    }
    counts[rule.table] = pruned;
  }
  return counts;
}

/** The crontab task's work: prune, then one log line with the counts. */
export async function runRetention(ctx: AppContext): Promise<PrunedCounts> {
  const started = performance.now();
  const pruned = await pruneOperationalRows(ctx.db.slonik, ctx.config);
  const prunedRows = ctx.metrics.counter({ name: 'retention_pruned_rows_total', help: 'Operational rows deleted by the retention job, by table.', labelNames: ['table'] });
  for (const [table, count] of Object.entries(pruned)) prunedRows.inc({ table }, count);
  ctx.logger.info({ pruned, durationMs: Math.round(performance.now() - started) }, 'retention run');
  return pruned;
}
