// Read model `patients`: the cohort uploads of each employer and their counts (no personal data; the
// roster itself is read from fhir_resources, see queries.ts).
import { sql } from 'slonik';
import type { Projection } from '../../src/event-store/projection.ts';
import type { CohortUploaded } from '../../src/patients/events.ts';

export const patientsProjection: Projection = {
  name: 'patients',
  tables: ['cohorts'],
  eventTypes: ['CohortUploaded'],
  awaitedByCommands: true,
  async apply(tx, events) {
    for (const recorded of events) {
      const { data } = recorded as unknown as CohortUploaded;
      await tx.query(sql.unsafe`
        INSERT INTO cohorts (employer_id, cohort_id, received, created, updated, unchanged, uploaded_at)
        VALUES (${recorded.metadata.tenantId!}, ${data.cohortId}, ${data.received}, ${data.created}, ${data.updated}, ${data.unchanged}, ${recorded.metadata.occurredAt})
        ON CONFLICT DO NOTHING`);
    }
  },
};
