#!/usr/bin/env node
// Runs a script under Node.js 24 (the version this service is built for) even where the machine's
// Node is older: fetches the `node@24` package from the npm registry once into ./.node24 and
// re-executes itself with that binary. Usage: node scripts/with-node24.mjs <script> [args...]
// The service (`src/cli.ts serve`) gets its V8 flags here (scripts/service-node-flags.mjs).
import { spawn, execFileSync } from 'node:child_process';
import { constants } from 'node:os';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SERVICE_NODE_FLAGS, startsService } from './service-node-flags.mjs';

const projectRoot = join(dirname(fileURLToPath(import.meta.url)), '..');
const [script, ...args] = process.argv.slice(2);
if (!script) {
  console.error('usage: with-node24.mjs <script> [args...]');
  process.exit(2);
}

let nodeBinary = process.execPath;
if (Number(process.versions.node.split('.')[0]) < 24) {
  const cacheDir = join(projectRoot, '.node24');
  nodeBinary = join(cacheDir, 'node_modules', 'node', 'bin', 'node');
  if (!existsSync(nodeBinary)) {
    console.error(`Node ${process.versions.node} is older than 24: fetching node@24 from the npm registry into .node24 (once) and re-running under it.`);
    execFileSync('npm', ['install', '--prefix', cacheDir, '--no-save', '--no-audit', '--no-fund', '--loglevel=error', 'node@24'], { stdio: ['ignore', 'ignore', 'inherit'] });
  } else {
    console.error(`Node ${process.versions.node} is older than 24: re-running under the cached Node 24 in .node24.`);
  }
}

// The child gets its own process group: a Ctrl-C in the terminal then reaches only this launcher,
// which forwards it, so the service shuts down in order and its embedded Postgres (a child of the
// service) is stopped by the service instead of being interrupted by the terminal mid-request.
const nodeFlags = startsService(script, args) ? SERVICE_NODE_FLAGS : [];
const child = spawn(nodeBinary, [...nodeFlags, join(projectRoot, script), ...args], { stdio: 'inherit', cwd: process.cwd(), detached: true });
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => child.kill(signal));
child.on('exit', (code, signal) => process.exit(code ?? 128 + (constants.signals[signal] ?? 1)));
