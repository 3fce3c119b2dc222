// What the export tests share: tenants with a cohort of patients, and raw fetches (exports answer
// files, not JSON).
import type { TestService } from '../support/service.ts';
import { apiClient, type ApiClient } from '../webhooks/helpers.ts';

export type ExportTenant = { employerId: string; cookie: string; api: ApiClient; fetch: (path: string, init?: RequestInit) => Promise<Response> };

export async function exportTenant(service: TestService, name?: string): Promise<ExportTenant> {
  const tenant = await service.createTenant(name ? { name } : {});
  const headers = service.sessionHeaders(tenant.cookie);
  return {
    employerId: tenant.employerId,
    cookie: tenant.cookie,
    api: apiClient(service, tenant),
    fetch: (path, init = {}) => fetch(`${service.url}${path}`, { ...init, headers: { ...headers, ...(init.headers as Record<string, string>) } }),
  };
}

/** Uploads one cohort; its id. */
export async function uploadPatients(api: ApiClient, patients: Array<Record<string, unknown>>): Promise<string> {
  const upload = await api.post('/api/employer/upload-cohort', { patients });
  if (upload.status !== 201) throw new Error(`upload failed: ${upload.status} ${JSON.stringify(upload.body)}`);
  return upload.body.cohortId;
}

/** Every roster patient, through the paged roster API (the reference an export is compared with). */
export async function rosterOf(api: ApiClient): Promise<any[]> {
  const patients: any[] = [];
  let cursor: string | null = null;
  do {
    const page = await api.get(`/api/employer/patients?limit=200${cursor ? `&cursor=${cursor}` : ''}`);
    patients.push(...page.body.patients);
    cursor = page.body.nextCursor;
  } while (cursor);
  return patients;
}
