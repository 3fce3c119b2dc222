// One Postgres server per test run: DATABASE_URL's server when set, else an embedded one in a temp
// directory. A migrated template database is made once; each test file clones it (fast, isolated).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { startEmbeddedPostgres } from '../../src/db/embedded-postgres.ts';
import { migrate } from '../../src/db/migrate.ts';
import { freePort } from './ports.ts';

export const TEMPLATE_DATABASE = 'employer_integrations_test_template';

export default async function setup(project: TestProject) {
  let adminUri = process.env.DATABASE_URL;
  let stop = async () => {};
  if (!adminUri) {
    const dataDir = await mkdtemp(join(tmpdir(), 'ei-test-pg-'));
    const embedded = await startEmbeddedPostgres({ dataDir, port: await freePort(), databaseName: 'postgres', persistent: false,
      // Many test files start several service processes at once, each with its own pools.
      settings: { max_connections: '500' } });
    adminUri = embedded.connectionUri;
    stop = async () => {
      await embedded.stop();
      await rm(dataDir, { recursive: true, force: true });
    };
  }
  const templateUri = withDatabase(adminUri, TEMPLATE_DATABASE);
  const admin = new pg.Client({ connectionString: adminUri });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${TEMPLATE_DATABASE}`);
  await admin.query(`CREATE DATABASE ${TEMPLATE_DATABASE}`);
  await admin.end();
  await migrate(templateUri);
  project.provide('adminDatabaseUri', adminUri);
  return stop;
}

export function withDatabase(uri: string, database: string): string {
  const url = new URL(uri);
  url.pathname = `/${database}`;
  return url.toString();
}


declare module 'vitest' {
  export interface ProvidedContext {
    adminDatabaseUri: string;
  }
}
