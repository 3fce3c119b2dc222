// The CLI as an operator runs it: `node src/cli.ts ...` in a process of its own, against a running
// test service's database and data directory (its audit signing key), its output and exit code
// returned rather than thrown.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { TestService } from './service.ts';

const run = promisify(execFile);

export type CliResult = { code: number; stdout: string; stderr: string };

/** `env` adds to (or overrides) the service's database, data directory and a silent log. */
export async function runCli(service: TestService, args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  const settings = {
    ...(process.env as Record<string, string>),
    DATABASE_URL: service.ctx.db.connectionUri,
    DATA_DIR: service.ctx.config.DATA_DIR,
    PUBLIC_BASE_URL: 'http://127.0.0.1:9',
    LOG_LEVEL: 'silent',
    ...env,
  };
  return run(process.execPath, ['src/cli.ts', ...args], { env: settings, cwd: process.cwd() }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: { code: number; stdout: string; stderr: string }) => ({ code: error.code, stdout: error.stdout, stderr: error.stderr }),
  );
}
