// Runs openapi-typescript (the generator most TypeScript users take) on an OpenAPI document:
// `node openapi-typescript.mjs <document.json> <out.ts>`. openapi-typescript builds its output with
// TypeScript 5's compiler API, which the project's TypeScript 7 no longer ships, so within this process
// its `import 'typescript'` resolves to the typescript-5 package (a devDependency alias); everything else
// keeps TypeScript 7.
import { readFile, writeFile } from 'node:fs/promises';
import { createRequire, registerHooks } from 'node:module';
import { pathToFileURL } from 'node:url';

const require = createRequire(import.meta.url);
const typescript5 = pathToFileURL(require.resolve('typescript-5')).href;
registerHooks({
  resolve(specifier, context, nextResolve) {
    if (specifier === 'typescript' && context.parentURL?.includes('/openapi-typescript/')) return { url: typescript5, format: 'commonjs', shortCircuit: true };
    return nextResolve(specifier, context);
  },
});

const [documentPath, outPath] = process.argv.slice(2);
const { default: openapiTS, astToString } = await import('openapi-typescript');
const document = JSON.parse(await readFile(documentPath, 'utf8'));
await writeFile(outPath, astToString(await openapiTS(document)));
