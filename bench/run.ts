// `npm run bench -- <name> [args...]` runs bench/<name>.ts, whose default export takes the args.
import { readdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const benchDir = dirname(fileURLToPath(import.meta.url));
const available = (await readdir(benchDir)).filter((file) => file.endsWith('.ts') && file !== 'run.ts' && file !== 'support.ts').map((file) => file.slice(0, -3));
const [name, ...args] = process.argv.slice(2);
if (!name || !available.includes(name)) {
  console.error(`usage: npm run bench -- <name> [args...]\navailable: ${available.join(', ') || '(none)'}`);
  process.exit(2);
}
const bench = (await import(`./${name}.ts`)) as { default: (args: string[]) => Promise<void> };
await bench.default(args);
