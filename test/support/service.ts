// Starts the whole service (HTTP API, projections, worker) on a fresh test database, and signs users in
// through the real sign-in link (its confirmation page, then the form's POST).
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config.ts';
import { issueSignInToken } from '../../src/identity/commands.ts';
import { startService, type Role, type Service } from '../../src/main.ts';
import { createEmployer } from '../../src/tenants/commands.ts';
import type { Capability } from '../../src/capability.ts';
import type { Projection } from '../../src/event-store/projection.ts';
import type { DestinationStream } from 'pino';
import { createTestDatabaseUri } from './database.ts';
import { freePort } from './ports.ts';
import { sessionCookieOf } from './sign-in.ts';

export type TestService = Service & {
  url: string;
  /** Headers a browser on our own origin sends with its session cookie. */
  sessionHeaders(cookie: string): Record<string, string>;
  createTenant(input?: { name?: string; adminEmail?: string }): Promise<{ employerId: string; adminUserId: string; cookie: string }>;
  signIn(employerId: string, userId: string): Promise<string>;
};

let tenantCounter = 0;

export async function startTestService(options: {
  env?: Record<string, string>;
  roles?: Role[];
  capabilities?: Capability[];
  extraProjections?: Projection[];
  logDestination?: DestinationStream;
  /** Reuse a database (a second process of the same service). */
  databaseUri?: string;
} = {}): Promise<TestService> {
  const port = await freePort();
  const databaseUri = options.databaseUri ?? (await createTestDatabaseUri());
  const config = loadConfig({
    NODE_ENV: 'test',
    PORT: String(port),
    HOST: '127.0.0.1',
    PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
    DATABASE_URL: databaseUri,
    DATA_DIR: await mkdtemp(join(tmpdir(), 'ei-test-data-')),
    LOG_LEVEL: options.logDestination ? 'info' : 'silent',
    // Tests poll with sessions and make keys as fast as they like: those limits are lifted unless a test sets them.
    SESSION_RATE_LIMIT_PER_MIN: '1000000',
    API_KEY_RATE_LIMIT_MAX_PER_MIN: '1000000',
    ...options.env,
  });
  const service = await startService({
    config,
    ...(options.roles ? { roles: options.roles } : {}),
    ...(options.capabilities ? { capabilities: options.capabilities } : {}),
    ...(options.extraProjections ? { extraProjections: options.extraProjections } : {}),
    ...(options.logDestination ? { logDestination: options.logDestination } : {}),
  });
  const url = service.url ? config.PUBLIC_BASE_URL : '';

  const signIn = async (employerId: string, userId: string) => {
    const { signInUrl } = await issueSignInToken(service.ctx, { tenantId: employerId, actor: { type: 'system', id: 'test' } }, { userId, via: 'cli' });
    return sessionCookieOf(signInUrl);
  };

  return {
    ...service,
    url,
    sessionHeaders: (cookie) => ({ cookie, origin: config.PUBLIC_BASE_URL }),
    signIn,
    async createTenant(input = {}) {
      tenantCounter += 1;
      const suffix = `${process.pid}-${tenantCounter}-${Math.random().toString(36).slice(2, 8)}`;
      const { employerId, adminUserId } = await createEmployer(service.ctx, { tenantId: null, actor: { type: 'system', id: 'test' } }, {
        name: input.name ?? `Tenant ${suffix}`,
        adminEmail: input.adminEmail ?? `admin-${suffix}@example.test`,
      });
      return { employerId, adminUserId, cookie: await signIn(employerId, adminUserId) };
    },
  };
}
