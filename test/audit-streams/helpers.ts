// What the audit stream tests share: the service's capabilities trusting the test receiver, making
// audit entries through the real API, reading back what a receiver got per preset, and the
// employer's entries in chain order as the database holds them.
import pg from 'pg';
import { capabilities } from '../../src/capabilities.ts';
import type { Capability } from '../../src/capability.ts';
import { createAuditStreamsCapability } from '../../src/audit-streams/capability.ts';
import { createApiKey } from '../support/api-keys.ts';
import type { HttpsReceiver, ReceivedRequest } from '../support/https-receiver.ts';
import type { TestService } from '../support/service.ts';

export type StreamedEntry = { id: string; employerId: string; action: string; chain: { seq: number; hash: string; prevHash: string } } & Record<string, unknown>;

export function capabilitiesTrusting(receiver: HttpsReceiver): Capability[] {
  const streams = createAuditStreamsCapability({ ca: receiver.ca });
  return capabilities.map((capability) => (capability.name === streams.name ? streams : capability));
}

/** `count` audit entries (api_key.created), one request each. */
export async function makeAuditEntries(service: TestService, tenant: { cookie: string }, count: number, prefix = 'key'): Promise<void> {
  for (let index = 0; index < count; index += 1) await createApiKey(service, tenant, { scopes: ['cohort:read'], name: `${prefix} ${index}` });
}

/** The entries one request carried, as its preset wrote them. */
export function entriesOf(request: ReceivedRequest): StreamedEntry[] {
  if (request.path === '/api/v2/logs') return (JSON.parse(request.body) as Array<{ message: string }>).map((item) => JSON.parse(item.message));
  const objects = request.body.split('\n').filter((line) => line !== '').map((line) => JSON.parse(line));
  return request.path === '/services/collector/event' ? objects.map((object) => object.event) : objects;
}

/** The employer's audit entry ids in audit chain order, read from the database itself. */
export async function chainOrderedEntryIds(databaseUri: string, employerId: string): Promise<string[]> {
  const client = new pg.Client({ connectionString: databaseUri });
  await client.connect();
  try {
    const { rows } = await client.query<{ event_id: string }>(
      `SELECT l.event_id FROM audit_chain ch JOIN audit_log l ON l.event_id = ch.event_id WHERE ch.employer_id = $1 ORDER BY ch.seq`, [employerId]);
    return rows.map((row) => row.event_id);
  } finally {
    await client.end();
  }
}
