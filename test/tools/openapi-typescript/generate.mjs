// node generate.mjs <openapi.json> <out.ts>: the TypeScript types openapi-typescript generates from an
// OpenAPI document, as its users run it.
import { readFile, writeFile } from 'node:fs/promises';
import openapiTS, { astToString } from 'openapi-typescript';

const [documentPath, outPath] = process.argv.slice(2);
const document = JSON.parse(await readFile(documentPath, 'utf8'));
await writeFile(outPath, astToString(await openapiTS(document)));
