// Refused SAML callbacks are counted, not recorded one event each: anyone may post to any employer's
// callback, and an event per refusal would let them write into its audit trail at will. Each API
// process counts refusals in memory per employer, minute and reason (with a sample of client
// addresses) and adds them to `saml_refusal_counts` every 5 s and on shutdown; the worker's
// saml-refusal-summaries job (every minute) records each finished minute of an employer as one
// SamlLoginsRefused event, its audit entry, then deletes the minute's rows. Only employers whose SAML
// is on are counted: the callback refuses the others (unknown, SAML off) before counting anything.
//
// A minute is summarised SETTLE_MS after its end, once every process's counts of it are in. Recording
// is once per stream (employer and minute) and comes before the delete, so a job that dies in between
// records nothing twice; counts a stalled process adds to a minute already recorded are dropped.
import { sql, type DatabasePool } from 'slonik';
import type { Logger } from 'pino';
import { z } from 'zod';
import type { AppContext } from '../app-context.ts';
import { handleCommand } from '../event-store/command-handler.ts';
import { tenantStream } from '../event-store/port.ts';
import { recordOnceDecider } from '../event-store/record-once.ts';
import { SAML_LOGIN_FAILURE_REASONS, type SamlLoginFailureReason, type SamlLoginsRefused } from './events.ts';

const WINDOW_MS = 60_000;
const FLUSH_INTERVAL_MS = 5_000;
const SETTLE_MS = 3 * FLUSH_INTERVAL_MS;
const SAMPLE_ADDRESSES = 10;

type Count = { employerId: string; windowStart: number; reason: SamlLoginFailureReason; refusals: number; clientAddresses: Set<string> };

export type SamlRefusalCounter = {
  count(employerId: string, reason: SamlLoginFailureReason, clientIp: string): void;
  /** Adds the counts held in memory to the table (also every 5 s and on stop). */
  flush(): Promise<void>;
  stop(): Promise<void>;
};

export function createSamlRefusalCounter(deps: { pool: DatabasePool; logger: Logger }): SamlRefusalCounter {
  let counts = new Map<string, Count>();

  const merge = (into: Map<string, Count>, entry: Count) => {
    const id = `${entry.employerId} ${entry.windowStart} ${entry.reason}`;
    const existing = into.get(id);
    if (!existing) return void into.set(id, { ...entry, clientAddresses: new Set(entry.clientAddresses) });
    existing.refusals += entry.refusals;
    for (const address of entry.clientAddresses) if (existing.clientAddresses.size < SAMPLE_ADDRESSES) existing.clientAddresses.add(address);
  };

  const write = async (entries: Count[]) => {
    if (entries.length === 0) return;
    const rows = entries.map((entry) => ({
      employer_id: entry.employerId,
      window_start: new Date(entry.windowStart).toISOString(),
      reason: entry.reason,
      refusals: entry.refusals,
      client_addresses: [...entry.clientAddresses],
    }));
    await deps.pool.query(sql.unsafe`
      INSERT INTO saml_refusal_counts (employer_id, window_start, reason, refusals, client_addresses)
      SELECT employer_id, window_start, reason, refusals, client_addresses
      FROM jsonb_to_recordset(${sql.jsonb(rows)}) AS r(employer_id text, window_start timestamptz, reason text, refusals integer, client_addresses text[])
      ON CONFLICT (employer_id, window_start, reason) DO UPDATE SET
        refusals = saml_refusal_counts.refusals + EXCLUDED.refusals,
        client_addresses = (
          SELECT coalesce(array_agg(address), '{}') FROM (
            SELECT DISTINCT address FROM unnest(saml_refusal_counts.client_addresses || EXCLUDED.client_addresses) AS address
            ORDER BY address LIMIT ${SAMPLE_ADDRESSES}
          ) AS sample
        )`);
  };

  const flush = async () => {
    const pending = counts;
    counts = new Map();
    await write([...pending.values()]).catch((error: unknown) => {
      for (const entry of pending.values()) merge(counts, entry);
      throw error;
    });
  };
  const timer = setInterval(() => {
    flush().catch((error) => deps.logger.error({ err: error }, 'SAML refusal counts flush failed; retrying at the next one'));
  }, FLUSH_INTERVAL_MS);
  timer.unref();

  return {
    count(employerId, reason, clientIp) {
      const now = Date.now();
      merge(counts, { employerId, windowStart: now - (now % WINDOW_MS), reason, refusals: 1, clientAddresses: new Set([clientIp]) });
    },
    flush,
    async stop() {
      clearInterval(timer);
      await flush();
    },
  };
}

const countRow = z.object({ employer_id: z.string(), window_start: z.string(), reason: z.enum(SAML_LOGIN_FAILURE_REASONS), refusals: z.number(), client_addresses: z.array(z.string()) });

type SamlRefusalSummaries = {
  job: 'saml-refusal-summaries';
  minutes: Array<{ employerId: string; windowStart: string; refusals: number; recorded: boolean }>;
};

/** Records every minute that ended SETTLE_MS or more before `now` as one SamlLoginsRefused event per employer. */
export async function summariseSamlRefusals(ctx: AppContext, now: Date): Promise<SamlRefusalSummaries> {
  const settledBefore = new Date(now.getTime() - SETTLE_MS - WINDOW_MS);
  const rows = await ctx.db.slonik.any(sql.type(countRow)`
    SELECT employer_id, window_start, reason, refusals, client_addresses
    FROM saml_refusal_counts WHERE window_start <= ${settledBefore.toISOString()}::timestamptz
    ORDER BY employer_id, window_start, reason`);
  const minutes: SamlRefusalSummaries['minutes'] = [];
  for (const group of Map.groupBy(rows, (row) => `${row.employer_id} ${row.window_start}`).values()) {
    const { employer_id: employerId, window_start: windowStartIso } = group[0]!;
    const windowStart = new Date(windowStartIso);
    const event: SamlLoginsRefused = {
      type: 'SamlLoginsRefused',
      data: {
        windowStart: windowStart.toISOString(),
        windowEnd: new Date(windowStart.getTime() + WINDOW_MS).toISOString(),
        refusals: group.reduce((sum, row) => sum + row.refusals, 0),
        byReason: group.map((row) => ({ reason: row.reason, refusals: row.refusals, clientAddresses: row.client_addresses })),
      },
    };
    const { newEvents } = await handleCommand(ctx.commands, {
      streamName: tenantStream(employerId, 'samlRefusals', windowStart.toISOString().slice(0, 16).replace(/[-T:]/g, '')),
      decider: recordOnceDecider,
      command: { record: event },
      context: { tenantId: employerId, actor: { type: 'system', id: 'saml-refusals' } },
    });
    await ctx.db.slonik.query(sql.unsafe`DELETE FROM saml_refusal_counts WHERE employer_id = ${employerId} AND window_start = ${windowStartIso}::timestamptz`);
    minutes.push({ employerId, windowStart: event.data.windowStart, refusals: event.data.refusals, recorded: newEvents.length > 0 });
  }
  return { job: 'saml-refusal-summaries', minutes };
}
