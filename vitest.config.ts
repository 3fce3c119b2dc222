import { defineConfig } from 'vitest/config';
import { SERVICE_NODE_FLAGS } from './scripts/service-node-flags.mjs';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // The tests run the service in their own processes: with the flags it runs with in production.
    execArgv: SERVICE_NODE_FLAGS,
    maxWorkers: 2,
    reporters: ['default'],
  },
});
