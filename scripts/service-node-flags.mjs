// The Node flags every service process runs with (`npm start` and `npm run cli -- serve` through
// scripts/with-node24.mjs, docker-compose.yml, the benches that start the service as its own process),
// and the test suite's processes too (vitest.config.ts), so that the tests run what production runs.
//
// Memory: with V8's defaults the young generation grows to 3 x 32 MB and the old generation to up to
// four times what is live before a full collection; an export's stream of short-lived rows then leaves
// 200 MB and more resident that is never given back. With a young generation of at most 3 x 8 MB and
// full collections once the old generation is 1.5 times what was live after the last one, the
// process stays near what it holds (`npm run bench -- export` prints the peaks). No hard limit
// (--max-old-space-size): a heap that truly needs more grows rather than crashing.
//
// Prototypes: --disable-proto=delete removes the `__proto__` accessor from Object.prototype, so that
// `object[name]` with a name from a request can never reach a prototype through `__proto__`: it reads
// and writes an ordinary property. Not `=throw`: Node's HTTP parser stores each header as
// `headers[name]`, and with `throw` a request with a `__proto__` header throws there, outside any
// handler, and ends the process (test/security/prototype-pollution.test.ts sends one).
export const SERVICE_NODE_FLAGS = ['--max-semi-space-size=8', '--heap-growing-percent=50', '--disable-proto=delete'];

/** Whether `node <script> <args>` starts the service (the CLI's `serve` command). */
export const startsService = (script, args) => /(^|\/)src\/cli\.ts$/.test(script) && args[0] === 'serve';
