// One process never holds more database connections than DATABASE_MAX_CONNECTIONS, counted by the
// server (pg_stat_activity of the process's own database) while reads and commands load every pool;
// and when none is free, a request waits at most DATABASE_CONNECTION_WAIT_MS, then gets 503.
import pg from 'pg';
import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/config.ts';
import { planConnections } from '../../src/db/pools.ts';
import { createApiKey, keyHeaders } from '../support/api-keys.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { apiClient, webhookEnv } from '../webhooks/helpers.ts';

describe('the connection plan', () => {
  it('gives an api process no worker pool and every connection of the budget to its pools', () => {
    const plan = planConnections(20, { worker: false });
    expect(plan).toMatchObject({ worker: 0, workerLease: 0, listener: 1, total: 20 });
    expect(plan.readModels + plan.eventStore + plan.pg + plan.listener).toBe(20);
    expect(plan.readModels).toBeGreaterThan(plan.eventStore);
  });

  it('gives a worker process graphile-worker\'s pool and the lease within the same budget', () => {
    const plan = planConnections(20, { worker: true });
    expect(plan.worker).toBeGreaterThan(0);
    expect(plan.workerLease).toBe(1);
    expect(plan.readModels + plan.eventStore + plan.pg + plan.listener + plan.worker + plan.workerLease).toBe(20);
  });

  it('refuses a budget too small for the roles, naming the variable', () => {
    expect(() => planConnections(7, { worker: true })).toThrow(ConfigError);
    expect(() => planConnections(7, { worker: true })).toThrow(/DATABASE_MAX_CONNECTIONS: 7 is too small for these roles; at least 10/);
  });
});

const BUDGET = 10;
let service: TestService;
let monitor: pg.Client;

beforeAll(async () => {
  service = await startTestService({ env: webhookEnv({ DATABASE_MAX_CONNECTIONS: String(BUDGET), API_KEY_RATE_LIMIT_PER_MIN: '1000000' }) });
  monitor = new pg.Client({ connectionString: service.ctx.db.connectionUri });
  await monitor.connect();
});
afterAll(async () => {
  await monitor?.end();
  await service?.stop();
});

describe('a process under load', () => {
  it(`holds at most DATABASE_MAX_CONNECTIONS (${BUDGET}) connections, and every request succeeds`, async () => {
    const tenant = await service.createTenant();
    const api = apiClient(service, tenant);
    const { rawKey } = await createApiKey(service, tenant, { scopes: ['webhook:manage'] });
    const keyed = apiClient(service, { headers: keyHeaders(rawKey) });

    let peak = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        // Client backends only: an autovacuum worker busy on this database (as the load's writes make
        // likely) is listed with its datname too, but it is no connection of the process.
        const { rows } = await monitor.query(`SELECT count(*)::int AS n FROM pg_stat_activity
          WHERE datname = current_database() AND backend_type = 'client backend' AND pid <> pg_backend_pid()`);
        peak = Math.max(peak, rows[0].n);
      }
    })();

    // 48 callers at once, each alternating key-authenticated reads and webhook creations (commands).
    const statuses: number[] = [];
    await Promise.all(
      Array.from({ length: 48 }, async (_, caller) => {
        for (let i = 0; i < 8; i++) {
          const response = (caller + i) % 2 === 0
            ? await keyed.get('/api/employer/webhooks')
            : await api.post('/api/employer/webhooks', { url: `https://127.0.0.1:9/hook-${caller}-${i}`, events: ['test.ping'] });
          statuses.push(response.status);
        }
      }),
    );
    sampling = false;
    await sampler;

    expect(statuses.filter((status) => status >= 300)).toEqual([]);
    expect(peak).toBeLessThanOrEqual(BUDGET);
    // The load did use the pools (the count is not trivially small).
    expect(peak).toBeGreaterThanOrEqual(5);
  });
});

describe('a process whose connections are all busy', () => {
  it('answers 503 DATABASE_UNAVAILABLE with Retry-After once DATABASE_CONNECTION_WAIT_MS has passed, not a hang', async () => {
    const busy = await startTestService({ env: { DATABASE_MAX_CONNECTIONS: '10', DATABASE_CONNECTION_WAIT_MS: '300' } });
    try {
      const tenant = await busy.createTenant();
      // Every read-model connection held by a slow statement; a session check needs one of them.
      const { readModels } = busy.ctx.db.plan;
      const holders = Array.from({ length: readModels }, () => busy.ctx.db.slonik.query(sql.unsafe`SELECT pg_sleep(5)`));
      const askedAt = Date.now();
      const response = await fetch(`${busy.url}/api/auth/session`, { headers: busy.sessionHeaders(tenant.cookie) });
      const elapsed = Date.now() - askedAt;
      expect(response.status).toBe(503);
      expect(response.headers.get('retry-after')).toMatch(/^\d+$/);
      expect(await response.json()).toEqual({ code: 'DATABASE_UNAVAILABLE', message: expect.any(String), requestId: expect.any(String) });
      expect(elapsed).toBeLessThan(4000); // the statements hold their connections for 5 s
      await Promise.all(holders);
      expect((await fetch(`${busy.url}/api/auth/session`, { headers: busy.sessionHeaders(tenant.cookie) })).status).toBe(200);
    } finally {
      await busy.stop();
    }
  });
});
