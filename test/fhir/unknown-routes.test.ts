// Requests no FHIR route answers (src/http/server.ts's not-found handler, src/http/route-methods.ts):
// an unknown path is 404 and a known path with a method it does not serve 405 with Allow, both
// OperationOutcomes in application/fhir+json (checked by fhir-api.ts's validating fetch).
import { describe, expect, it } from 'vitest';
import { base, client, mainHeaders, newPatient } from './fhir-api.ts';

describe('unknown FHIR routes and methods', () => {
  it('answers an unknown path with 404 not-found, as an OperationOutcome', async () => {
    for (const path of ['/Observation/o1/_nothing', '/Patient/p1/nothing/here', '/Patient/p1/_history/1/more']) {
      const response = await fetch(`${base}${path}`, { headers: mainHeaders });
      expect(response.status, path).toBe(404);
      expect(response.headers.get('content-type'), path).toContain('application/fhir+json');
      expect(((await response.json()) as any).issue[0].code, path).toBe('not-found');
    }
  });

  it('answers a known path with a method it does not serve with 405 not-supported and the methods it serves in Allow', async () => {
    const patient = (await client.create({ resourceType: 'Patient', body: newPatient() })) as any;
    const cases: [string, string, string][] = [
      ['PATCH', `/Patient/${patient.id}`, 'DELETE, GET, HEAD, PUT'],
      ['DELETE', '/Patient', 'GET, HEAD, POST'],
      ['PUT', `/Patient/${patient.id}/_history/1`, 'GET, HEAD'],
      ['DELETE', `/Patient/${patient.id}/_history`, 'GET, HEAD'],
      ['PATCH', '/Patient/_search', 'DELETE, GET, HEAD, POST, PUT'],
      ['GET', '', 'POST'],
    ];
    for (const [method, path, allow] of cases) {
      const response = await fetch(`${base}${path}`, { method, headers: mainHeaders });
      expect(response.status, `${method} ${path}`).toBe(405);
      expect(response.headers.get('allow'), `${method} ${path}`).toBe(allow);
      expect(response.headers.get('content-type')).toContain('application/fhir+json');
      const outcome = (await response.json()) as any;
      expect(outcome.issue[0]).toMatchObject({ severity: 'error', code: 'not-supported' });
      expect(outcome.issue[0].diagnostics).toContain(allow);
    }
  });

  it('keeps the default error shape outside /api/fhir', async () => {
    const response = await fetch(`${base.replace('/api/fhir', '/api/nothing-here')}`);
    expect(response.status).toBe(404);
    expect(await response.json()).toMatchObject({ code: 'NOT_FOUND' });
  });
});
