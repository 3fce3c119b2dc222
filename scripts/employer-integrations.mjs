#!/usr/bin/env node
// The package's command (`employer-integrations <command>`): the CLI, under Node 24.
process.argv.splice(2, 0, 'src/cli.ts');
await import('./with-node24.mjs');
