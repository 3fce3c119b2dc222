// The three request shapes of an audit stream batch, each as its vendor documents it:
// - ndjson: POST to the stream's URL, `content-type: application/x-ndjson`, one entry per line,
//   signed as webhooks are (src/crypto/webhook-signature.ts): `x-webhook-signature: sha256=<hex>` and
//   Standard Webhooks' `webhook-id` (the batch id), `webhook-timestamp`, `webhook-signature`;
// - splunk_hec: Splunk HTTP Event Collector, `POST /services/collector/event`, `Authorization: Splunk
//   <token>`, the body concatenated event objects `{ time, host, source, sourcetype, event }`;
// - datadog: Datadog logs intake v2, `POST /api/v2/logs`, `DD-API-KEY`, a JSON array of
//   `{ ddsource, ddtags, hostname, service, message }` (at most 1,000 entries and 5 MB a request).
// For the two vendors the URL gives the intake's origin; their documented path replaces its path.
// Every shape carries `x-audit-stream-batch-id`: the same id for the same entries on every retry,
// so a receiver can drop a batch it already has.
import packageJson from '../../package.json' with { type: 'json' };
import type { StreamedAuditEntry } from '../../projections/audit-streams/entries.ts';
import { bodySignature, standardWebhookSignature } from '../crypto/webhook-signature.ts';
import type { AuditStreamPreset } from './events.ts';

export const BATCH_ID_HEADER = 'x-audit-stream-batch-id';
/** Datadog's documented limit per request; the others take AUDIT_STREAM_BATCH_MAX_ENTRIES as is. */
export const DATADOG_MAX_ENTRIES = 1000;
export const AUDIT_STREAM_SOURCE = 'employer-integrations';
const USER_AGENT = `employer-integrations-audit-streams/${packageJson.version}`;

const PATHS: Record<AuditStreamPreset, string | null> = { ndjson: null, splunk_hec: '/services/collector/event', datadog: '/api/v2/logs' };

/** Where a preset posts: the URL itself (ndjson), or the vendor's path on its origin. */
export function destinationUrl(preset: AuditStreamPreset, url: string): string {
  const path = PATHS[preset];
  return path === null ? url : new URL(path, new URL(url).origin).toString();
}

/** One entry as its preset writes it (a line of ndjson, a Splunk event, a Datadog log item). */
function entryText(preset: AuditStreamPreset, entry: StreamedAuditEntry, host: string): string {
  switch (preset) {
    case 'ndjson':
      return JSON.stringify(entry);
    case 'splunk_hec':
      // `time`: epoch seconds with milliseconds, as HEC documents it.
      return JSON.stringify({ time: Date.parse(entry.occurredAt) / 1000, host, source: AUDIT_STREAM_SOURCE, sourcetype: '_json', event: entry });
    case 'datadog':
      return JSON.stringify({
        ddsource: AUDIT_STREAM_SOURCE,
        ddtags: `employer_id:${entry.employerId},action:${entry.action}`,
        hostname: host,
        service: AUDIT_STREAM_SOURCE,
        message: JSON.stringify(entry),
      });
  }
}

/**
 * The longest prefix of `entries` (one at least) whose body stays within `maxBytes`: what one batch
 * sends. Deterministic, so a batch sent again is cut the same way.
 */
export function batchEntries(preset: AuditStreamPreset, entries: StreamedAuditEntry[], options: { host: string; maxBytes: number }): StreamedAuditEntry[] {
  let bytes = 2; // a Datadog array's brackets; a separator for the others
  const taken: StreamedAuditEntry[] = [];
  for (const entry of entries) {
    bytes += Buffer.byteLength(entryText(preset, entry, options.host), 'utf8') + 1;
    if (taken.length > 0 && bytes > options.maxBytes) break;
    taken.push(entry);
  }
  return taken;
}

export type BatchRequest = { url: string; body: string; headers: Record<string, string> };

export function buildBatchRequest(input: {
  preset: AuditStreamPreset;
  url: string;
  /** In clear: the signing secret (ndjson), the HEC token or the Datadog API key. */
  secret: string;
  batchId: string;
  entries: StreamedAuditEntry[];
  /** The service's host name, as the vendors' `host`/`hostname`. */
  host: string;
  signedAt: Date;
}): BatchRequest {
  const { preset, secret, batchId, entries, host } = input;
  const lines = entries.map((entry) => entryText(preset, entry, host));
  const common = { 'user-agent': USER_AGENT, [BATCH_ID_HEADER]: batchId };
  const url = destinationUrl(preset, input.url);
  switch (preset) {
    case 'ndjson': {
      const body = `${lines.join('\n')}\n`;
      const timestamp = String(Math.floor(input.signedAt.getTime() / 1000));
      return {
        url,
        body,
        headers: {
          ...common,
          'content-type': 'application/x-ndjson',
          'x-webhook-signature': bodySignature(secret, body),
          'webhook-id': batchId,
          'webhook-timestamp': timestamp,
          'webhook-signature': `v1,${standardWebhookSignature(secret, `${batchId}.${timestamp}.${body}`)}`,
        },
      };
    }
    case 'splunk_hec':
      return { url, body: lines.join('\n'), headers: { ...common, 'content-type': 'application/json', authorization: `Splunk ${secret}` } };
    case 'datadog':
      return { url, body: `[${lines.join(',')}]`, headers: { ...common, 'content-type': 'application/json', 'dd-api-key': secret } };
  }
}
