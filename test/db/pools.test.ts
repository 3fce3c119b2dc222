// The pg pools keep a connection that the server refused a statement on (it stays usable), and close
// one that broke.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeDatabase, openDatabase, planConnections, type Database } from '../../src/db/pools.ts';
import { startTestService, type TestService } from '../support/service.ts';

let service: TestService;
let db: Database;

beforeAll(async () => {
  service = await startTestService({ roles: [] });
  db = await openDatabase(service.ctx.db.connectionUri, { plan: { ...planConnections(10, { worker: false }), eventStore: 1 } });
});
afterAll(async () => {
  await closeDatabase(db);
  await service?.stop();
});

const backendPid = async () => (await db.eventStore.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;

describe('a pg pool', () => {
  it('keeps its connection when the server refuses a statement', async () => {
    const before = await backendPid();
    await expect(db.eventStore.query('SELECT 1 / 0')).rejects.toBeInstanceOf(pg.DatabaseError);
    await expect(db.eventStore.query({ text: 'SELECT $1::int', values: ['not a number'] })).rejects.toBeInstanceOf(pg.DatabaseError);
    expect(await backendPid()).toBe(before);
  });

  it('replaces a connection that broke', async () => {
    const before = await backendPid();
    // The idle connection's end reaches the pool as an error, on which it removes the client.
    const removed = new Promise((resolve) => db.eventStore.once('remove', resolve));
    const admin = new pg.Client({ connectionString: service.ctx.db.connectionUri });
    await admin.connect();
    try {
      await admin.query('SELECT pg_terminate_backend($1)', [before]);
    } finally {
      await admin.end();
    }
    await removed;
    expect(await backendPid()).not.toBe(before);
  });
});
