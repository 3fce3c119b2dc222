// `npm start -- --role worker` as a real child process, so that a test can really kill it (SIGKILL)
// in the middle of a job and see what the next worker does.
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type pg from 'pg';
import { waitUntil, webhookEnv } from '../webhooks/helpers.ts';
import { startServiceProcess } from './service-process.ts';

/** Resolves once the worker runs on `databaseUri`; `ca` (a PEM) reaches it the production way, NODE_EXTRA_CA_CERTS; `env` adds settings. */
export async function startWorkerProcess(databaseUri: string, options: { ca?: string; env?: Record<string, string> } = {}): Promise<ChildProcess> {
  const dir = await mkdtemp(join(tmpdir(), 'ei-worker-'));
  const extraCa: Record<string, string> = {};
  if (options.ca) {
    extraCa.NODE_EXTRA_CA_CERTS = join(dir, 'extra-ca.pem');
    await writeFile(extraCa.NODE_EXTRA_CA_CERTS, options.ca);
  }
  const { child } = await startServiceProcess('worker', { ...webhookEnv(), NODE_ENV: 'test', DATABASE_URL: databaseUri, DATA_DIR: dir, LOG_LEVEL: 'silent', ...extraCa, ...options.env });
  return child;
}

/** SIGKILLs the worker and waits until the server has noticed: the dead process's lease is no longer held. */
export async function killWorkerProcess(worker: ChildProcess, admin: pg.Client): Promise<void> {
  worker.kill('SIGKILL');
  await once(worker, 'exit');
  await waitUntil('the lease connection to close', async () => {
    const { rows } = await admin.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'webhook-worker-lease'`);
    return rows[0].n === 0;
  });
}
