// Read model `patients`: the cohort uploads of each employer and their counts, and the patients of
// each cohort (ids only, no personal data; the roster itself is read from fhir_resources, see queries.ts).
// A 10,000-row upload is 10,000 events in one batch, so rows are written a statement per batch, not
// per event; an erasure writes what came before it first, keeping the events' order.
import { sql } from 'slonik';
import type { Projection } from '../../src/event-store/projection.ts';
import type { CohortUploaded, PatientEvent } from '../../src/patients/events.ts';

type Tx = Parameters<Projection['apply']>[0];
type Member = { employerId: string; cohortId: string; patientId: string };

export const patientsProjection: Projection = {
  name: 'patients',
  tables: ['cohorts', 'cohort_members'],
  eventTypes: ['CohortUploaded', 'PatientRegistered', 'PatientUpdated', 'PatientErased'],
  awaitedByCommands: true,
  // Applied in the appending transaction, as fhir-resources is: an upload's cohort is there when it answers.
  inline: true,
  async apply(tx, events) {
    let members: Member[] = [];
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
          if (event.data.cohortId) members.push({ employerId, cohortId: event.data.cohortId, patientId: event.data.patientId });
          break;
        case 'PatientErased':
          await insertMembers(tx, members);
          members = [];
          await tx.query(sql.unsafe`DELETE FROM cohort_members WHERE employer_id = ${employerId} AND patient_id = ${event.data.patientId}`);
          break;
      }
    }
    await insertMembers(tx, members);
  },
};

async function insertMembers(tx: Tx, members: Member[]) {
  if (members.length === 0) return;
  await tx.query(sql.unsafe`
    INSERT INTO cohort_members (employer_id, cohort_id, patient_id)
    SELECT * FROM unnest(${sql.array(members.map((m) => m.employerId), 'text')}::text[], ${sql.array(members.map((m) => m.cohortId), 'text')}::text[],
                         ${sql.array(members.map((m) => m.patientId), 'text')}::text[])
    ON CONFLICT DO NOTHING`);
}
