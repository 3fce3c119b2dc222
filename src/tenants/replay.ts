// How `events replay` shows users' events: their sealed personal fields stay ciphertext (an operator
// tool prints no personal data, and the audit chain is over the stored bytes), and those of a user
// whose data key is destroyed are named as erased, as patients' are (src/patients/replay.ts).
import type { CommonQueryMethods } from 'slonik';
import { erasedSubjects } from '../crypto/personal-data.ts';
import type { RecordedEvent } from '../event-store/port.ts';

/** The personal fields of a user's event that can no longer be opened. */
export const USER_ERASED_FIELDS = ['data.personal.sealed'] as const;

/** Ids of the events among `events` whose sealed personal fields belong to an erased user. */
export async function eventsOfErasedUsers(db: CommonQueryMethods, employerId: string, events: readonly RecordedEvent[]): Promise<Set<string>> {
  const sealed = events.filter((event) => {
    const personal = event.data.personal as { sealed?: unknown } | undefined;
    return typeof personal?.sealed === 'string' && typeof event.data.userId === 'string';
  });
  const erased = await erasedSubjects(db, employerId, sealed.map((event) => String(event.data.userId)));
  return new Set(sealed.filter((event) => erased.has(String(event.data.userId))).map((event) => event.eventId));
}
