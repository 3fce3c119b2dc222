// The CLI as an operator runs it: a separate Node process against the same database.
import { execFile } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabaseUri } from '../support/database.ts';

const run = promisify(execFile);

describe('cli', () => {
  let env: Record<string, string>;
  beforeAll(async () => {
    env = {
      ...(process.env as Record<string, string>),
      DATABASE_URL: await createTestDatabaseUri(),
      DATA_DIR: await mkdtemp(join(tmpdir(), 'ei-cli-')),
      PUBLIC_BASE_URL: 'http://127.0.0.1:9',
      LOG_LEVEL: 'silent',
    };
  });
  const cli = (...args: string[]) => run(process.execPath, ['src/cli.ts', ...args], { env, cwd: process.cwd() });

  it('creates a tenant, issues sign-in links, replays the tenant\'s events and reports projections', async () => {
    const created = JSON.parse((await cli('tenants', 'create', '--name', 'Acme', '--admin-email', 'admin@acme.test', '--admin-first-name', 'Ada', '--admin-last-name', 'Admin', '--json')).stdout);
    expect(created.employerId).toMatch(/^emp_/);
    expect(created.signInUrl).toMatch(/^http:\/\/127\.0\.0\.1:9\/api\/auth\/signin\?token=/);

    const link = JSON.parse((await cli('signin-link', '--email', 'ADMIN@acme.test', '--json')).stdout);
    expect(link).toMatchObject({ employerId: created.employerId, userId: created.adminUserId });

    const replay = (await cli('events', 'replay', '--tenant', created.employerId, '--format', 'ndjson')).stdout.trim().split('\n').map((line) => JSON.parse(line));
    expect(replay.map((event) => event.type)).toEqual(['EmployerCreated', 'UserRegistered', 'SignInTokenIssued', 'SignInTokenIssued']);
    expect(replay.every((event) => event.metadata.tenantId === created.employerId)).toBe(true);
    expect(replay[0].metadata).toMatchObject({ actor: { type: 'system', id: 'cli' }, schemaVersion: 1 });
    // No secret in the auditor's stream: sign-in tokens appear only as hashes.
    const token = new URL(link.signInUrl).searchParams.get('token')!;
    expect(JSON.stringify(replay)).not.toContain(token);

    const fromSecond = (await cli('events', 'replay', '--tenant', created.employerId, '--from', replay[1].position)).stdout.trim().split('\n');
    expect(fromSecond).toHaveLength(2);

    const status = (await cli('projections', 'status')).stdout;
    expect(status).toMatch(/tenants/);
    expect(status).toMatch(/audit/);

    const rebuilt = await cli('projections', 'rebuild', 'tenants');
    expect(rebuilt.stdout).toMatch(/tenants: rebuilt/);
    const again = JSON.parse((await cli('signin-link', '--email', 'admin@acme.test', '--json')).stdout);
    expect(again.userId).toBe(created.adminUserId);
  }, 120_000);

  it('creates a platform token shown once (--json), stored only as its hash, and revokes it', async () => {
    const created = JSON.parse((await cli('platform-tokens', 'create', '--name', 'billing', '--families', 'invoice,authorization', '--json')).stdout);
    expect(created).toEqual({ id: expect.stringMatching(/^ptok_/), token: expect.stringMatching(/^ptk_/) });
    expect((await cli('platform-tokens', 'revoke', created.id)).stdout).toMatch(/revoked/);
    const unknownFamily = await cli('platform-tokens', 'create', '--name', 'x', '--families', 'payroll').catch((error) => error);
    expect(unknownFamily.code).toBe(2);
    expect(unknownFamily.stderr).toMatch(/--families/);
    const unknownToken = await cli('platform-tokens', 'revoke', 'ptok_nope').catch((error) => error);
    expect(unknownToken.code).toBe(2);
    expect(unknownToken.stderr).toMatch(/not found/);
  }, 120_000);

  it('explains bad usage with exit code 2', async () => {
    const failure = await cli('tenants', 'create', '--name', 'NoEmail').catch((error) => error);
    expect(failure.code).toBe(2);
    expect(failure.stderr).toMatch(/--admin-email/);
    const emptyName = await cli('tenants', 'create', '--name', 'Named', '--admin-email', 'named@acme.test', '--admin-first-name', ' ').catch((error) => error);
    expect(emptyName.code).toBe(2);
    expect(emptyName.stderr).toMatch(/--admin-first-name/);
  });
});
