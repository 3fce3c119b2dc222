// The service builds the console at start-up only when the bundle is missing or older than a source.
import { stat, utimes } from 'node:fs/promises';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { CONSOLE_DIST, ensureConsoleBundle } from '../../src/console/bundle.ts';

it('rebuilds a stale bundle, and leaves a current one alone', async () => {
  await ensureConsoleBundle();
  const script = join(CONSOLE_DIST, 'app.js');
  await utimes(script, new Date(0), new Date(0)); // older than every source: stale
  expect(await ensureConsoleBundle()).toBe(true);
  expect((await stat(script)).mtimeMs).toBeGreaterThan(0);
  expect(await ensureConsoleBundle()).toBe(false);
});
