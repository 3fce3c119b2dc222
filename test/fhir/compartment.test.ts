// A PATIENT session's compartment (src/patients/fhir/compartment.ts): its own Patient and what
// references it, nothing else, and no writes.
import { describe, expect, it } from 'vitest';
import { base, newEmployerClient, newPatient, patientSessionHeaders } from './fhir-api.ts';

describe('a PATIENT session', () => {
  it('reads only its own compartment: its Patient (by its user\'s e-mail) and what references it; writes nothing', async () => {
    const { employerId, client: admin } = await newEmployerClient();
    const own = await admin.create({ resourceType: 'Patient', body: newPatient() }) as any;
    const other = await admin.create({ resourceType: 'Patient', body: newPatient() }) as any;
    const observation = (patient: any) => ({ resourceType: 'Observation', status: 'final', code: { text: 'BMI' }, subject: { reference: `Patient/${patient.id}` } });
    const ownObservation = await admin.create({ resourceType: 'Observation', body: observation(own) }) as any;
    const otherObservation = await admin.create({ resourceType: 'Observation', body: observation(other) }) as any;

    const headers = await patientSessionHeaders(employerId, own.telecom[0].value.toUpperCase());
    const get = async (path: string) => {
      const response = await fetch(`${base}/${path}`, { headers });
      return { status: response.status, body: (await response.json()) as any };
    };
    expect((await get(`Patient/${own.id}`)).status).toBe(200);
    expect((await get(`Observation/${ownObservation.id}`)).status).toBe(200);
    expect((await get(`Patient/${other.id}`)).status).toBe(404);
    expect((await get(`Observation/${otherObservation.id}`)).status).toBe(404);
    expect((await get('Observation')).body.entry.map((e: any) => e.resource.id)).toEqual([ownObservation.id]);
    expect((await get('Patient')).body.entry.map((e: any) => e.resource.id)).toEqual([own.id]);
    const write = await fetch(`${base}/Patient`, { method: 'POST', headers: { ...headers, 'content-type': 'application/fhir+json' }, body: JSON.stringify(newPatient()) });
    expect(write.status).toBe(403);
    expect(((await write.json()) as any).issue[0].code).toBe('forbidden');

    const stranger = await patientSessionHeaders(employerId, `nobody.${Date.now()}@example.test`);
    const none = await fetch(`${base}/Patient`, { headers: stranger });
    expect(((await none.json()) as any).total).toBe(0);
  });
});
