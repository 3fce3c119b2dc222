// A resource's versions as their events wrote them (vread.ts, history.ts): the read model keeps only
// the current version, the event stream every one, sealed under the patient's data key.
import type { KeyObject } from 'node:crypto';
import { openPersonal } from '../../crypto/personal-data.ts';
import type { RecordedEvent } from '../../event-store/port.ts';
import { withMeta } from '../../../projections/fhir-resources/queries.ts';
import { patientStream, resourceStream } from '../commands.ts';
import { sealContext, type FhirJson, type FhirResourceType } from '../events.ts';

const WRITING_EVENTS = new Set(['PatientRegistered', 'PatientUpdated', 'ClinicalResourceCreated', 'ClinicalResourceUpdated']);
const DELETING_EVENTS = new Set(['ClinicalResourceDeleted']);

export const streamOf = (employerId: string, resourceType: FhirResourceType, id: string) =>
  resourceType === 'Patient' ? patientStream(employerId, id) : resourceStream(employerId, resourceType, id);

/** One version: the resource, or `deleted` (a deletion has no content). */
export type ResourceVersion = { versionId: number; lastUpdated: string } & ({ deleted: false; resource: FhirJson } | { deleted: true });

/** The version an event of the resource's stream wrote, or null when the event is no version (an erasure). */
export function versionOf(event: RecordedEvent, key: KeyObject, employerId: string, resourceType: FhirResourceType, id: string): ResourceVersion | null {
  const versionId = Number(event.streamRevision) + 1;
  const lastUpdated = event.metadata.occurredAt;
  if (DELETING_EVENTS.has(event.type)) return { versionId, lastUpdated, deleted: true };
  if (!WRITING_EVENTS.has(event.type)) return null;
  const content = openPersonal<FhirJson>(String(event.data.sealed), key, sealContext(employerId, resourceType, id));
  return { versionId, lastUpdated, deleted: false, resource: withMeta(resourceType, id, versionId, lastUpdated, content) };
}
