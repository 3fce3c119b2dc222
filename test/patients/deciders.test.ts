// The patient, e-mail claim, clinical resource and cohort deciders: given / when / then, no database.
import { describe, it } from 'vitest';
import { clinicalResourceDecider } from '../../src/patients/clinical-resource.ts';
import { cohortDecider } from '../../src/patients/cohort.ts';
import type { ClinicalResourceEvent, CohortUploaded, EmailClaimEvent, PatientEvent } from '../../src/patients/events.ts';
import { emailClaimDecider } from '../../src/patients/email-claim.ts';
import { patientDecider } from '../../src/patients/patient.ts';
import { deciderSpec } from '../support/decider.ts';

const version = { patientId: 'p1', emailIndex: 'idx-a', sealed: 'v1.sealed', cohortId: null };
const registered: PatientEvent = { type: 'PatientRegistered', data: version };
const erased: PatientEvent = { type: 'PatientErased', data: { patientId: 'p1', erasedAt: '2026-03-01T00:00:00.000Z' } };

describe('patient decider', () => {
  const given = deciderSpec(patientDecider);
  it('registers once', () => {
    given([]).when({ type: 'RegisterPatient', ...version }).then([registered]);
    given([registered]).when({ type: 'RegisterPatient', ...version }).thenThrows({ kind: 'conflict' });
  });
  it('updates at the expected version only (If-Match)', () => {
    given([registered]).when({ type: 'UpdatePatient', ...version, expectedVersion: 1 }).then([{ type: 'PatientUpdated', data: version }]);
    given([registered, { type: 'PatientUpdated', data: version }]).when({ type: 'UpdatePatient', ...version, expectedVersion: 1 }).thenThrows({ kind: 'precondition_failed' });
    given([]).when({ type: 'UpdatePatient', ...version }).thenThrows({ kind: 'not_found' });
  });
  it('erases once, and an erased patient changes no more (410)', () => {
    given([registered]).when({ type: 'ErasePatient', patientId: 'p1', erasedAt: erased.data.erasedAt as string }).then([erased]);
    given([registered, erased]).when({ type: 'ErasePatient', patientId: 'p1', erasedAt: 'later' }).then([]);
    given([registered, erased]).when({ type: 'UpdatePatient', ...version }).thenThrows({ kind: 'gone' });
    given([]).when({ type: 'ErasePatient', patientId: 'p1', erasedAt: 'now' }).thenThrows({ kind: 'not_found' });
  });
});

describe('e-mail claim decider', () => {
  const given = deciderSpec(emailClaimDecider);
  const claimed: EmailClaimEvent = { type: 'PatientEmailClaimed', data: { emailIndex: 'idx-a', patientId: 'p1' } };
  const released: EmailClaimEvent = { type: 'PatientEmailReleased', data: { emailIndex: 'idx-a', patientId: 'p1' } };
  it('gives an address to one patient at a time', () => {
    given([]).when({ type: 'ClaimEmail', emailIndex: 'idx-a', patientId: 'p1' }).then([claimed]);
    given([claimed]).when({ type: 'ClaimEmail', emailIndex: 'idx-a', patientId: 'p1' }).then([]);
    given([claimed]).when({ type: 'ClaimEmail', emailIndex: 'idx-a', patientId: 'p2' }).thenThrows({ kind: 'conflict', code: 'EMAIL_UNAVAILABLE' });
  });
  it('releases only its holder\'s claim, after which another patient may claim it', () => {
    given([claimed]).when({ type: 'ReleaseEmail', emailIndex: 'idx-a', patientId: 'p2' }).then([]);
    given([claimed]).when({ type: 'ReleaseEmail', emailIndex: 'idx-a', patientId: 'p1' }).then([released]);
    given([claimed, released]).when({ type: 'ClaimEmail', emailIndex: 'idx-a', patientId: 'p2' }).then([{ type: 'PatientEmailClaimed', data: { emailIndex: 'idx-a', patientId: 'p2' } }]);
  });
});

describe('clinical resource decider', () => {
  const given = deciderSpec(clinicalResourceDecider);
  const content = { resourceType: 'Observation' as const, resourceId: 'o1', patientId: 'p1', sealed: 'v1.sealed' };
  const created: ClinicalResourceEvent = { type: 'ClinicalResourceCreated', data: content };
  it('creates, then updates at the expected version only', () => {
    given([]).when({ type: 'CreateResource', ...content }).then([created]);
    given([created]).when({ type: 'UpdateResource', ...content, expectedVersion: 1 }).then([{ type: 'ClinicalResourceUpdated', data: content }]);
    given([created]).when({ type: 'UpdateResource', ...content, expectedVersion: 2 }).thenThrows({ kind: 'precondition_failed' });
    given([]).when({ type: 'UpdateResource', ...content }).thenThrows({ kind: 'not_found' });
  });
  it('deletes as a version of its own, once; an update brings a deleted resource back', () => {
    const identity = { resourceType: 'Observation' as const, resourceId: 'o1' };
    const deleted: ClinicalResourceEvent = { type: 'ClinicalResourceDeleted', data: { ...identity, patientId: 'p1' } };
    given([created]).when({ type: 'DeleteResource', ...identity }).then([deleted]);
    given([created, deleted]).when({ type: 'DeleteResource', ...identity }).then([]);
    given([created]).when({ type: 'DeleteResource', ...identity, expectedVersion: 2 }).thenThrows({ kind: 'precondition_failed' });
    given([]).when({ type: 'DeleteResource', ...identity }).thenThrows({ kind: 'not_found' });
    given([created, deleted]).when({ type: 'UpdateResource', ...content, expectedVersion: 2 }).then([{ type: 'ClinicalResourceUpdated', data: content }]);
  });
});

describe('cohort decider', () => {
  const given = deciderSpec(cohortDecider);
  const summary = { cohortId: 'c1', received: 3, created: 1, updated: 1, unchanged: 1 };
  const uploaded: CohortUploaded = { type: 'CohortUploaded', data: summary };
  it('records an upload\'s summary once', () => {
    given([]).when({ type: 'RecordUpload', ...summary }).then([uploaded]);
    given([uploaded]).when({ type: 'RecordUpload', ...summary }).thenThrows({ kind: 'conflict', code: 'COHORT_EXISTS' });
  });
});
