// One real upcast: WebhookSubscriptionDeactivated version 1 carried `deliveryId: null` for a manual
// deactivation; version 2 carries a deliveryId only with the causes that have one. Version 1 events,
// inserted into the table exactly as the code of that version wrote them, reach the decider and the
// projections as version 2, and a rebuild over them gives the read model that version 2 events give.
import { sql } from 'slonik';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditProjection } from '../../projections/audit/projection.ts';
import { rebuildProjection } from '../../projections/rebuild.ts';
import { applyBatch } from '../../projections/runner.ts';
import { webhooksProjection } from '../../projections/webhooks/projection.ts';
import { capabilities } from '../../src/capabilities.ts';
import { handleCommand } from '../../src/event-store/command-handler.ts';
import { START, type AppendMetadata, type EventStore, type NewEvent, type RecordedEvent } from '../../src/event-store/port.ts';
import { createPostgresEventStore } from '../../src/event-store/postgres.ts';
import type { Projection } from '../../src/event-store/projection.ts';
import { webhookDecider, webhookStream } from '../../src/webhooks/subscription.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { serviceEventRegistry } from '../support/event-registry.ts';

const employerId = 'emp_upcast';
const occurredAt = '2026-01-02T03:04:05.000Z';
const metadata: AppendMetadata = { tenantId: employerId, actor: { type: 'system', id: 'test' }, correlationId: 'c', causationId: null, occurredAt };

/** One subscription's history, as version 1 of WebhookSubscriptionDeactivated wrote it. */
const historyV1 = (webhookId: string): NewEvent[] => [
  {
    type: 'WebhookSubscriptionCreated',
    data: { webhookId, url: 'https://example.test/hook', events: ['test.ping'], description: null, maxFailures: 1, sealedSecret: 'sealed', createdAt: occurredAt },
  },
  { type: 'WebhookSubscriptionDeactivated', data: { webhookId, reason: 'manual', deliveryId: null } },
  { type: 'WebhookSubscriptionActivated', data: { webhookId } },
  { type: 'WebhookDeliveryExhausted', data: { webhookId, deliveryId: 'd1', failureCount: 1 } },
  { type: 'WebhookSubscriptionDeactivated', data: { webhookId, reason: 'failure_threshold', deliveryId: 'd1' } },
];

/** The same history as the current code writes it. */
const historyV2 = (webhookId: string): NewEvent[] =>
  historyV1(webhookId).map((event) => {
    if (event.type !== 'WebhookSubscriptionDeactivated') return event;
    const { deliveryId, ...data } = event.data;
    return { type: event.type, data: data.reason === 'manual' ? data : { ...data, deliveryId } };
  });

describe('upcasting WebhookSubscriptionDeactivated from version 1 to 2', () => {
  let database: TestDatabase;
  let store: EventStore;

  beforeAll(async () => {
    database = await createTestDatabase();
    store = createPostgresEventStore(database.db.eventStore, database.notifications, serviceEventRegistry);
    // Version 1 events, inserted raw as that code wrote them (metadata schemaVersion 1)...
    const v1 = historyV1('whk_v1');
    await database.db.slonik.query(sql.unsafe`
      INSERT INTO events (event_id, stream_name, stream_revision, tenant_id, type, data, metadata)
      SELECT gen_random_uuid(), ${webhookStream(employerId, 'whk_v1')}, e.revision - 1, ${employerId}, e.type, e.data,
             ${sql.jsonb({ ...metadata, schemaVersion: 1 })}
      FROM unnest(${sql.array(v1.map((event) => event.type), 'text')}::text[], ${sql.array(v1.map((event) => JSON.stringify(event.data)), 'jsonb')}::jsonb[])
        WITH ORDINALITY AS e(type, data, revision)`);
    // ...and the same history through the event store as the current code writes it.
    await store.appendToStream(webhookStream(employerId, 'whk_v2'), historyV2('whk_v2'), { expectedRevision: 'no_stream', metadata });
  });
  afterAll(async () => {
    await store?.close();
    await database?.cleanup();
  });

  const readAllEvents = async (): Promise<RecordedEvent[]> => {
    for (let attempt = 0; attempt < 500; attempt++) {
      const events = await store.readAll({ after: START });
      if (events.length >= 10) return events;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    throw new Error('expected 10 visible events');
  };

  it('stores version 2 for new events and reads version 1 events as version 2', async () => {
    const stored = await database.db.slonik.any(sql.type(z.object({ stream_name: z.string(), version: z.number() }))`
      SELECT stream_name, (metadata->>'schemaVersion')::int AS version FROM events WHERE type = 'WebhookSubscriptionDeactivated' ORDER BY global_position`);
    expect(stored.map((row) => [row.stream_name.split('.')[1], row.version])).toEqual([['webhook-whk_v1', 1], ['webhook-whk_v1', 1], ['webhook-whk_v2', 2], ['webhook-whk_v2', 2]]);

    const read = await store.readStream(webhookStream(employerId, 'whk_v1'));
    const deactivations = read.filter((event) => event.type === 'WebhookSubscriptionDeactivated');
    expect(deactivations.map((event) => [event.data, event.metadata.schemaVersion])).toEqual([
      [{ webhookId: 'whk_v1', reason: 'manual' }, 2],
      [{ webhookId: 'whk_v1', reason: 'failure_threshold', deliveryId: 'd1' }, 2],
    ]);
  });

  it('gives the decider the same state from version 1 events as from version 2 events', async () => {
    // Recording an exhausted delivery again, through the command handler: it folds the parsed stream.
    const recordAgain = async (webhookId: string) =>
      handleCommand(
        { eventStore: store, waitForProjections: async () => true },
        { streamName: webhookStream(employerId, webhookId), decider: webhookDecider, command: { type: 'RecordDeliveryExhausted', deliveryId: 'd1' }, context: { tenantId: employerId, actor: metadata.actor } },
      );
    const [fromV1, fromV2] = [await recordAgain('whk_v1'), await recordAgain('whk_v2')];
    expect(fromV1.state).toMatchObject({ status: 'inactive', failureCount: 1, exhaustedDeliveryIds: ['d1'] });
    expect({ ...fromV1.state, webhookId: 'same' }).toEqual({ ...fromV2.state, webhookId: 'same' });
    expect([fromV1.newEvents, fromV2.newEvents]).toEqual([[], []]);
  });

  it('projects version 1 events as version 2 ones, live and in a rebuild', async () => {
    const events = await readAllEvents();
    const audit = auditProjection(Object.assign({}, ...capabilities.map((capability) => capability.auditMappers ?? {})));
    const projections: Projection[] = [webhooksProjection, audit];
    for (const projection of projections) await applyBatch(database.db.slonik, projection, events);

    const subscriptions = () =>
      database.db.slonik.any(sql.type(z.object({ id: z.string(), status: z.string(), disabled_reason: z.string().nullable(), failure_count: z.number(), updated_at: z.string() }))`
        SELECT id, status, disabled_reason, failure_count, updated_at::text FROM webhook_subscriptions ORDER BY id`);
    const auditDetails = () =>
      database.db.slonik.any(sql.type(z.object({ target_id: z.string(), action: z.string(), details: z.unknown() }))`
        SELECT target_id, action, details FROM audit_log ORDER BY global_position`);
    const live = { subscriptions: await subscriptions(), audit: await auditDetails() };

    const [v1, v2] = live.subscriptions;
    expect(v1).toMatchObject({ id: 'whk_v1', status: 'inactive', disabled_reason: 'failure_threshold', failure_count: 1 });
    expect({ ...v1, id: 'same' }).toEqual({ ...v2, id: 'same' });
    const auditOf = (webhookId: string) => live.audit.filter((row) => row.target_id === webhookId).map(({ action, details }) => ({ action, details }));
    expect(auditOf('whk_v1')).toEqual(auditOf('whk_v2'));

    for (const projection of projections) await rebuildProjection({ db: database.db, eventStore: store, projection });
    expect({ subscriptions: await subscriptions(), audit: await auditDetails() }).toEqual(live);
  });
});
