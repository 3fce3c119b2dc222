// How `events replay` shows the events of patients: sealed fields stay ciphertext (an operator tool
// prints no health data, and the audit chain is over the stored bytes), and those of an erased patient
// are named as erased, since nothing can open them any more.
import type { CommonQueryMethods } from 'slonik';
import { erasedSubjects } from '../crypto/personal-data.ts';
import type { RecordedEvent } from '../event-store/port.ts';

/** The personal fields of an event that can no longer be opened: its patient's data key is destroyed. */
export const ERASED_FIELDS = ['data.sealed'] as const;

/** Ids of the events among `events` whose sealed personal fields belong to an erased patient. */
export async function eventsOfErasedPatients(db: CommonQueryMethods, employerId: string, events: readonly RecordedEvent[]): Promise<Set<string>> {
  const sealed = events.filter((event) => typeof event.data.sealed === 'string' && typeof event.data.patientId === 'string');
  const erased = await erasedSubjects(db, employerId, sealed.map((event) => String(event.data.patientId)));
  return new Set(sealed.filter((event) => erased.has(String(event.data.patientId))).map((event) => event.eventId));
}
