// Read model `patients`: the cohort uploads of each employer and their counts, and the patients of
// each cohort (ids only, no personal data; the roster itself is read from fhir_resources, see queries.ts).
import { sql } from 'slonik';
import type { Projection } from '../../src/event-store/projection.ts';
import type { CohortUploaded, PatientEvent } from '../../src/patients/events.ts';

export const patientsProjection: Projection = {
  name: 'patients',
  tables: ['cohorts', 'cohort_members'],
  eventTypes: ['CohortUploaded', 'PatientRegistered', 'PatientUpdated', 'PatientErased'],
  awaitedByCommands: true,
  async apply(tx, events) {
    for (const recorded of events) {
      const employerId = recorded.metadata.tenantId!;
      const event = recorded as unknown as CohortUploaded | PatientEvent;
      switch (event.type) {
        case 'CohortUploaded': {
          const { data } = event;
          await tx.query(sql.unsafe`
            INSERT INTO cohorts (employer_id, cohort_id, received, created, updated, unchanged, uploaded_at)
            VALUES (${employerId}, ${data.cohortId}, ${data.received}, ${data.created}, ${data.updated}, ${data.unchanged}, ${recorded.metadata.occurredAt})
            ON CONFLICT DO NOTHING`);
          break;
        }
        case 'PatientRegistered':
        case 'PatientUpdated':
          // Null through FHIR: the patient joins no cohort.
          if (event.data.cohortId) {
            await tx.query(sql.unsafe`
              INSERT INTO cohort_members (employer_id, cohort_id, patient_id) VALUES (${employerId}, ${event.data.cohortId}, ${event.data.patientId})
              ON CONFLICT DO NOTHING`);
          }
          break;
        case 'PatientErased':
          await tx.query(sql.unsafe`DELETE FROM cohort_members WHERE employer_id = ${employerId} AND patient_id = ${event.data.patientId}`);
          break;
      }
    }
  },
};
