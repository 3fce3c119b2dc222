// How `events replay` shows the events of patients: sealed fields stay ciphertext (an operator tool
// prints no health data), and those of an erased patient read ERASED, since nothing can open them.
import type { CommonQueryMethods } from 'slonik';
import { ERASED, erasedSubjects } from '../crypto/personal-data.ts';
import type { RecordedEvent } from '../event-store/port.ts';

export async function markErasedFields(db: CommonQueryMethods, employerId: string, events: RecordedEvent[]): Promise<RecordedEvent[]> {
  const sealed = events.filter((event) => typeof event.data.sealed === 'string' && typeof event.data.patientId === 'string');
  const erased = await erasedSubjects(db, employerId, sealed.map((event) => String(event.data.patientId)));
  if (erased.size === 0) return events;
  return events.map((event) =>
    typeof event.data.sealed === 'string' && erased.has(String(event.data.patientId)) ? { ...event, data: { ...event.data, sealed: ERASED } } : event,
  );
}
