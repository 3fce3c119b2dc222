// A fresh, migrated database for one test file, cloned from the run's template.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { inject } from 'vitest';
import { createNotifications, type Notifications } from '../../src/db/notifications.ts';
import { closeDatabase, openDatabase, type Database } from '../../src/db/pools.ts';
import { TEMPLATE_DATABASE, withDatabase } from './global-setup.ts';

export type TestDatabase = { connectionUri: string; db: Database; notifications: Notifications; cleanup(): Promise<void> };

/** Creates an empty migrated database and returns its URI (no pools opened). */
export async function createTestDatabaseUri(): Promise<string> {
  const adminUri = inject('adminDatabaseUri');
  const name = `t_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUri });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name} TEMPLATE ${TEMPLATE_DATABASE}`);
  } finally {
    await admin.end();
  }
  return withDatabase(adminUri, name);
}

export async function createTestDatabase(): Promise<TestDatabase> {
  const connectionUri = await createTestDatabaseUri();
  const db = await openDatabase(connectionUri);
  const notifications = createNotifications(connectionUri);
  return {
    connectionUri,
    db,
    notifications,
    async cleanup() {
      await notifications.close();
      await closeDatabase(db);
    },
  };
}
