// Two kinds of per-request facts kept in memory and written in batches (never one write per request):
// usage telemetry of each key (requestCount, lastUsedAt, lastUsedIp) and API_KEY_IP_NOT_ALLOWED
// rejections, counted per key, address and minute for the hourly integration-alerts job. A flush
// writes each kind in one statement; the pipeline flushes every 5 seconds and on shutdown. If a flush
// fails its counts are merged back and written by the next one.
import { sql, type DatabasePool } from 'slonik';
import type { Clock } from './rate-limiter.ts';

type KeyRef = { id: string; employerId: string };
type Usage = { keyId: string; employerId: string; count: number; lastUsedAt: number; lastUsedIp: string };
type Rejections = { employerId: string; keyId: string; ip: string; minute: number; count: number; firstAt: number; lastAt: number };

export type UsageRecorder = {
  recordUse(key: KeyRef, ip: string): void;
  recordIpRejection(key: KeyRef, ip: string): void;
  flush(): Promise<void>;
};

export function createUsageRecorder(deps: { pool: DatabasePool; clock: Clock }): UsageRecorder {
  let usage = new Map<string, Usage>();
  let rejections = new Map<string, Rejections>();

  const mergeUsage = (into: Map<string, Usage>, entry: Usage) => {
    const existing = into.get(entry.keyId);
    if (!existing) return void into.set(entry.keyId, { ...entry });
    existing.count += entry.count;
    if (entry.lastUsedAt >= existing.lastUsedAt) Object.assign(existing, { lastUsedAt: entry.lastUsedAt, lastUsedIp: entry.lastUsedIp });
  };
  const mergeRejections = (into: Map<string, Rejections>, entry: Rejections) => {
    const id = `${entry.employerId} ${entry.keyId} ${entry.ip} ${entry.minute}`;
    const existing = into.get(id);
    if (!existing) return void into.set(id, { ...entry });
    existing.count += entry.count;
    existing.firstAt = Math.min(existing.firstAt, entry.firstAt);
    existing.lastAt = Math.max(existing.lastAt, entry.lastAt);
  };

  const writeUsage = async (entries: Usage[]) => {
    if (entries.length === 0) return;
    const rows = entries.map((entry) => ({
      key_id: entry.keyId, employer_id: entry.employerId, request_count: entry.count,
      last_used_at: new Date(entry.lastUsedAt).toISOString(), last_used_ip: entry.lastUsedIp,
    }));
    await deps.pool.query(sql.unsafe`
      INSERT INTO api_key_usage (key_id, employer_id, request_count, last_used_at, last_used_ip)
      SELECT key_id, employer_id, request_count, last_used_at, last_used_ip
      FROM jsonb_to_recordset(${sql.jsonb(rows)}) AS r(key_id text, employer_id text, request_count bigint, last_used_at timestamptz, last_used_ip text)
      ON CONFLICT (key_id) DO UPDATE SET
        request_count = api_key_usage.request_count + EXCLUDED.request_count,
        last_used_ip = CASE WHEN EXCLUDED.last_used_at >= api_key_usage.last_used_at THEN EXCLUDED.last_used_ip ELSE api_key_usage.last_used_ip END,
        last_used_at = GREATEST(api_key_usage.last_used_at, EXCLUDED.last_used_at)`);
  };

  const writeRejections = async (entries: Rejections[]) => {
    if (entries.length === 0) return;
    const rows = entries.map((entry) => ({
      employer_id: entry.employerId, key_id: entry.keyId, ip: entry.ip, minute: new Date(entry.minute).toISOString(),
      rejections: entry.count, first_at: new Date(entry.firstAt).toISOString(), last_at: new Date(entry.lastAt).toISOString(),
    }));
    await deps.pool.query(sql.unsafe`
      INSERT INTO api_key_ip_rejections (employer_id, key_id, ip, minute, rejections, first_at, last_at)
      SELECT employer_id, key_id, ip, minute, rejections, first_at, last_at
      FROM jsonb_to_recordset(${sql.jsonb(rows)}) AS r(employer_id text, key_id text, ip text, minute timestamptz, rejections integer, first_at timestamptz, last_at timestamptz)
      ON CONFLICT (employer_id, key_id, ip, minute) DO UPDATE SET
        rejections = api_key_ip_rejections.rejections + EXCLUDED.rejections,
        first_at = LEAST(api_key_ip_rejections.first_at, EXCLUDED.first_at),
        last_at = GREATEST(api_key_ip_rejections.last_at, EXCLUDED.last_at)`);
  };

  return {
    recordUse(key, ip) {
      mergeUsage(usage, { keyId: key.id, employerId: key.employerId, count: 1, lastUsedAt: deps.clock(), lastUsedIp: ip });
    },
    recordIpRejection(key, ip) {
      const now = deps.clock();
      mergeRejections(rejections, { employerId: key.employerId, keyId: key.id, ip, minute: now - (now % 60_000), count: 1, firstAt: now, lastAt: now });
    },
    async flush() {
      const pendingUsage = usage;
      const pendingRejections = rejections;
      usage = new Map();
      rejections = new Map();
      await Promise.all([
        writeUsage([...pendingUsage.values()]).catch((error) => {
          for (const entry of pendingUsage.values()) mergeUsage(usage, entry);
          throw error;
        }),
        writeRejections([...pendingRejections.values()]).catch((error) => {
          for (const entry of pendingRejections.values()) mergeRejections(rejections, entry);
          throw error;
        }),
      ]);
    },
  };
}
