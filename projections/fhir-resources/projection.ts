// Read model `fhir-resources`: the current version of each FHIR resource in clear (fhir_resources, as
// JSONB with id and meta), one row per search-parameter value (fhir_search_values), opened with the
// data key of the patient it belongs to, and one row per version without content (fhir_resource_versions,
// what history pages through). This is the one place personal data is kept in clear, so an erasure
// blanks it here: the patient's rows keep ids and versions only (reads answer 410), their search values
// and versions go. An event whose patient's key is already gone (a lagging runner, a rebuild) is written
// as erased straight away. A deleted resource keeps its row, without content, marked deleted.
// Inline (applied in the appending transaction, src/event-store/postgres.ts): a command's resources are
// readable, and their unique e-mails, when it answers. Applied late or again (KurrentDB, a retried
// parked event), a version older than the row's changes nothing but its history.
import type { KeyObject } from 'node:crypto';
import { sql } from 'slonik';
import { z } from 'zod';
import { dataKeys, emailBlindIndex, openPersonal } from '../../src/crypto/personal-data.ts';
import type { Projection } from '../../src/event-store/projection.ts';
import { sealContext, type ClinicalResourceEvent, type FhirJson, type FhirResourceType, type PatientEvent } from '../../src/patients/events.ts';
import { withMeta } from './queries.ts';
import { indexValues } from './search-parameters.ts';

type Row = { employerId: string; type: FhirResourceType; id: string; version: number; at: string; createdAt: string; patientId: string; resource: FhirJson | null; deleted: boolean; erased: boolean };

/** Resources written by one apply from which the tables' statistics are gathered again in it. */
const ANALYZE_AFTER_ROWS = 1000;

/** Rows written as a later version: only these can have search values to replace. */
const isUpdate = (row: Row) => row.version > 1;

export function fhirResourcesProjection(encryptionKey: KeyObject): Projection {
  return {
    name: 'fhir-resources',
    tables: ['fhir_resources', 'fhir_search_values', 'fhir_resource_versions'],
    eventTypes: ['PatientRegistered', 'PatientUpdated', 'PatientErased', 'ClinicalResourceCreated', 'ClinicalResourceUpdated', 'ClinicalResourceDeleted'],
    awaitedByCommands: true,
    inline: true,
    async apply(tx, events) {
      // The data keys of every patient in the batch, per employer, in one query each.
      const keysByEmployer = new Map<string, Map<string, KeyObject | null>>();
      const patientsByEmployer = new Map<string, Set<string>>();
      for (const event of events) {
        const employerId = event.metadata.tenantId!;
        if (!patientsByEmployer.has(employerId)) patientsByEmployer.set(employerId, new Set());
        patientsByEmployer.get(employerId)!.add(String(event.data.patientId));
      }
      for (const [employerId, patients] of patientsByEmployer) keysByEmployer.set(employerId, await dataKeys(tx, encryptionKey, employerId, [...patients]));

      const rows = new Map<string, Row>();
      const versions: Row[] = [];
      const erased: { employerId: string; patientId: string }[] = [];
      for (const recorded of events) {
        const event = recorded as unknown as PatientEvent | ClinicalResourceEvent;
        const employerId = recorded.metadata.tenantId!;
        if (event.type === 'PatientErased') {
          erased.push({ employerId, patientId: event.data.patientId });
          continue;
        }
        const [type, id] = event.type === 'PatientRegistered' || event.type === 'PatientUpdated'
          ? (['Patient', event.data.patientId] as const)
          : ([event.data.resourceType, event.data.resourceId] as const);
        const key = keysByEmployer.get(employerId)?.get(event.data.patientId);
        const version = Number(recorded.streamRevision) + 1;
        const at = recorded.metadata.occurredAt;
        const deleted = event.type === 'ClinicalResourceDeleted';
        const content = key && !deleted ? openPersonal<FhirJson>(event.data.sealed, key, sealContext(employerId, type, id)) : null;
        const resource = content && withMeta(type, id, version, at, content);
        const rowKey = `${employerId}/${type}/${id}`;
        // Created when its first version in the batch was (a row that exists keeps its own).
        const createdAt = rows.get(rowKey)?.createdAt ?? at;
        const row = { employerId, type, id, version, at, createdAt, patientId: event.data.patientId, resource, deleted, erased: !key };
        rows.set(rowKey, row);
        if (key) versions.push(row);
      }
      await writeRows(tx, [...rows.values()], encryptionKey);
      await writeVersions(tx, versions);
      if (erased.length > 0) await eraseRows(tx, erased);
      // A large write (a cohort upload, applied inline) leaves the planner's statistics far off until
      // autovacuum comes: searches right after it were planned as nested scans and ran into the
      // statement timeout (503). Fresh ones commit with the rows.
      if (rows.size >= ANALYZE_AFTER_ROWS) await tx.query(sql.unsafe`ANALYZE fhir_resources, fhir_search_values`);
    },
  };
}

async function writeRows(tx: Parameters<Projection['apply']>[0], batch: Row[], encryptionKey: KeyObject) {
  if (batch.length === 0) return;
  const column = <T,>(pick: (row: Row) => T) => batch.map(pick);
  const written = await tx.anyFirst(sql.type(z.object({ key: z.string() }))`
    INSERT INTO fhir_resources (employer_id, resource_type, id, version_id, created_at, last_updated, patient_id, resource, erased, deleted)
    SELECT e, t, i, v, c, a, p, r::jsonb, x.erased, x.deleted
    FROM unnest(${sql.array(column((r) => r.employerId), 'text')}::text[], ${sql.array(column((r) => r.type), 'text')}::text[],
                ${sql.array(column((r) => r.id), 'text')}::text[], ${sql.array(column((r) => r.version), 'int4')}::int[],
                ${sql.array(column((r) => r.at), 'timestamptz')}::timestamptz[], ${sql.array(column((r) => r.createdAt), 'timestamptz')}::timestamptz[],
                ${sql.array(column((r) => r.patientId), 'text')}::text[],
                ${sql.array(column((r) => (r.resource ? JSON.stringify(r.resource) : null)), 'text')}::text[],
                ${sql.array(column((r) => r.erased), 'bool')}::bool[], ${sql.array(column((r) => r.deleted), 'bool')}::bool[]) AS x(e, t, i, v, a, c, p, r, erased, deleted)
    ON CONFLICT (employer_id, resource_type, id) DO UPDATE
      SET version_id = excluded.version_id, last_updated = excluded.last_updated, patient_id = excluded.patient_id,
          resource = excluded.resource, erased = excluded.erased, deleted = excluded.deleted
      WHERE fhir_resources.version_id < excluded.version_id
    RETURNING employer_id || '/' || resource_type || '/' || id AS key`);
  // Only the rows written: an older version than the row's has no search values to give.
  const keys = new Set(written);
  const rows = batch.filter((row) => keys.has(`${row.employerId}/${row.type}/${row.id}`));
  // One resource at a time, by its index: a join with the batch could be planned as a scan of the
  // whole table while it has no statistics yet (right after a large upload).
  for (const row of rows.filter(isUpdate)) {
    await tx.query(sql.unsafe`DELETE FROM fhir_search_values WHERE employer_id = ${row.employerId} AND resource_type = ${row.type} AND resource_id = ${row.id}`);
  }
  const values = rows.flatMap((row) =>
    row.resource ? indexValues(row.type, row.resource, (email) => emailBlindIndex(encryptionKey, row.employerId, email)).map((value) => ({ row, ...value })) : [],
  );
  if (values.length === 0) return;
  await tx.query(sql.unsafe`
    INSERT INTO fhir_search_values (employer_id, resource_type, resource_id, param, value)
    SELECT * FROM unnest(${sql.array(values.map((v) => v.row.employerId), 'text')}::text[], ${sql.array(values.map((v) => v.row.type), 'text')}::text[],
                         ${sql.array(values.map((v) => v.row.id), 'text')}::text[], ${sql.array(values.map((v) => v.param), 'text')}::text[],
                         ${sql.array(values.map((v) => v.value), 'text')}::text[])`);
}

async function writeVersions(tx: Parameters<Projection['apply']>[0], versions: Row[]) {
  if (versions.length === 0) return;
  const column = <T,>(pick: (row: Row) => T) => versions.map(pick);
  await tx.query(sql.unsafe`
    INSERT INTO fhir_resource_versions (employer_id, resource_type, id, version_id, last_updated, patient_id, deleted)
    SELECT * FROM unnest(${sql.array(column((r) => r.employerId), 'text')}::text[], ${sql.array(column((r) => r.type), 'text')}::text[],
                         ${sql.array(column((r) => r.id), 'text')}::text[], ${sql.array(column((r) => r.version), 'int4')}::int[],
                         ${sql.array(column((r) => r.at), 'timestamptz')}::timestamptz[], ${sql.array(column((r) => r.patientId), 'text')}::text[],
                         ${sql.array(column((r) => r.deleted), 'bool')}::bool[])
    ON CONFLICT DO NOTHING`);
}

/** Blanks an erased patient's resources, keeping ids and versions, and drops their search values and history. */
async function eraseRows(tx: Parameters<Projection['apply']>[0], erased: { employerId: string; patientId: string }[]) {
  const employers = sql.array(erased.map((e) => e.employerId), 'text');
  const patients = sql.array(erased.map((e) => e.patientId), 'text');
  await tx.query(sql.unsafe`
    DELETE FROM fhir_search_values s USING fhir_resources r, unnest(${employers}::text[], ${patients}::text[]) AS x(e, p)
    WHERE r.employer_id = x.e AND r.patient_id = x.p AND s.employer_id = r.employer_id AND s.resource_type = r.resource_type AND s.resource_id = r.id`);
  await tx.query(sql.unsafe`
    DELETE FROM fhir_resource_versions v USING unnest(${employers}::text[], ${patients}::text[]) AS x(e, p)
    WHERE v.employer_id = x.e AND v.patient_id = x.p`);
  await tx.query(sql.unsafe`
    UPDATE fhir_resources r SET resource = NULL, erased = true
    FROM unnest(${employers}::text[], ${patients}::text[]) AS x(e, p) WHERE r.employer_id = x.e AND r.patient_id = x.p`);
}

