// A PATIENT session's compartment (src/patients/fhir/compartment.ts): its own Patient and what
// references it, nothing else, and no writes.
import { Client } from 'fhir-kit-client';
import { describe, expect, it } from 'vitest';
import { registerUser } from '../../src/tenants/commands.ts';
import { createApiKey, keyHeaders } from '../support/api-keys.ts';
import { service, base, newPatient } from './fhir-api.ts';

describe('a PATIENT session', () => {
  it('reads only its own compartment: its Patient (by its user\'s e-mail) and what references it; writes nothing', async () => {
    const tenant = await service.createTenant();
    const { rawKey } = await createApiKey(service, tenant, { scopes: ['fhir:read', 'fhir:write'] });
    const admin = new Client({ baseUrl: base, customHeaders: keyHeaders(rawKey) });
    const own = await admin.create({ resourceType: 'Patient', body: newPatient() }) as any;
    const other = await admin.create({ resourceType: 'Patient', body: newPatient() }) as any;
    const observation = (patient: any) => ({ resourceType: 'Observation', status: 'final', code: { text: 'BMI' }, subject: { reference: `Patient/${patient.id}` } });
    const ownObservation = await admin.create({ resourceType: 'Observation', body: observation(own) }) as any;
    const otherObservation = await admin.create({ resourceType: 'Observation', body: observation(other) }) as any;

    const session = async (email: string) => {
      const { userId } = await registerUser(service.ctx.commands, { tenantId: tenant.employerId, actor: { type: 'system', id: 'test' } }, {
        employerId: tenant.employerId, role: 'PATIENT', active: true, source: 'scim',
        profile: { email, userName: email, givenName: null, familyName: null, displayName: null, externalId: null },
      });
      return service.sessionHeaders(await service.signIn(tenant.employerId, userId));
    };
    const headers = await session(own.telecom[0].value.toUpperCase());
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

    const stranger = await session(`nobody.${Date.now()}@example.test`);
    const none = await fetch(`${base}/Patient`, { headers: stranger });
    expect(((await none.json()) as any).total).toBe(0);
  });
});
