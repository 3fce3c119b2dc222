// The shared LISTEN connection: local publication, and knowing whether other processes of the service
// listen, which decides whether appends and checkpoints are announced through the database at all.
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createNotifications, type Notifications } from '../../src/db/notifications.ts';
import { createPostgresEventStore } from '../../src/event-store/postgres.ts';
import { tenantStream } from '../../src/event-store/port.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { storeTestEventRegistry } from '../support/event-registry.ts';

describe('notifications', () => {
  let database: TestDatabase;
  const opened: Notifications[] = [];
  const open = () => {
    const notifications = createNotifications(database.connectionUri, { peerCheckMs: 0 });
    opened.push(notifications);
    return notifications;
  };
  beforeAll(async () => {
    database = await createTestDatabase();
  });
  // Each case starts with no listener of the service connected: the peers it sees are its own.
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((notifications) => notifications.close()));
  });
  afterAll(async () => database?.cleanup());
  // The check runs in the background; the answer settles within a few round trips.
  const settlesOn = (notifications: Notifications, expected: boolean) =>
    vi.waitFor(() => expect(notifications.peersListening()).toBe(expected), { timeout: 5000, interval: 5 });

  it("delivers a local publication at once to this process's listeners only", async () => {
    const here = open();
    const elsewhere = open();
    const heard: string[] = [];
    const heardElsewhere: string[] = [];
    await here.listen('local_test', (payload) => heard.push(payload));
    await elsewhere.listen('local_test', (payload) => heardElsewhere.push(payload));
    here.publishLocally('local_test', 'hello');
    expect(heard).toEqual(['hello']);
    expect(heardElsewhere).toEqual([]);
  });

  it('knows whether another process of the service listens on the same database', async () => {
    // The test database's own pools (database.notifications is never connected) do not count.
    const first = open();
    await first.listen('peers_test', () => {});
    await settlesOn(first, false);
    const second = open();
    await second.listen('peers_test', () => {});
    await settlesOn(first, true);
    await settlesOn(second, true);
    await second.close();
    await settlesOn(first, false);
  });

  it('hears at once of a process that starts listening, without waiting for its next check', async () => {
    const first = createNotifications(database.connectionUri, { peerCheckMs: 3_600_000 });
    opened.push(first);
    await first.ready();
    await settlesOn(first, false); // its one check in the hour
    await open().ready();
    await settlesOn(first, true);
  });

  it('announces appends through the database only while another process listens', async () => {
    const notifications = open();
    const store = createPostgresEventStore(database.db.eventStore, notifications, storeTestEventRegistry);
    const subscription = store.subscribeToAll({}, async () => {});
    await settlesOn(notifications, false);
    // A plain client listening is not a process of the service: it only counts what is sent.
    const observer = new pg.Client({ connectionString: database.connectionUri });
    await observer.connect();
    const announcements: string[] = [];
    observer.on('notification', (message) => announcements.push(message.payload ?? ''));
    await observer.query('LISTEN events_appended');
    const metadata = { tenantId: 't1', actor: { type: 'system', id: 'test' }, correlationId: 'c', causationId: null, schemaVersion: 1, occurredAt: new Date().toISOString() } as const;

    await store.appendToStream(tenantStream('t1', 'thing', 'alone'), [{ type: 'Counted', data: {} }], { expectedRevision: 'no_stream', metadata });
    const peer = open();
    await peer.listen('events_appended', () => {});
    await settlesOn(notifications, true);
    await store.appendToStream(tenantStream('t1', 'thing', 'with-peer'), [{ type: 'Counted', data: {} }], { expectedRevision: 'no_stream', metadata });
    await vi.waitFor(() => expect(announcements.length).toBeGreaterThan(0), { timeout: 5000, interval: 5 });
    // Notifications arrive in commit order: one sent for the first append would have come first.
    expect(announcements).toHaveLength(1);
    await observer.end();
    await subscription.stop();
  });
});
