// A SCIM client as an IdP is one: plain HTTP with the employer's bearer token, JSON bodies sent as
// application/scim+json (Entra ID) or application/json (Okta). The token comes from the real
// POST /api/employer/sso of the tenant's admin.
import type { TestService } from '../support/service.ts';

export type ScimResponse = { status: number; headers: Headers; body: any };

export type ScimClient = {
  token: string;
  request(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<ScimResponse>;
};

export async function enableScim(service: TestService, tenant: { cookie: string }, change: Record<string, unknown> = { scimEnabled: true }): Promise<string> {
  const response = await fetch(`${service.url}/api/employer/sso`, {
    method: 'POST',
    headers: { ...service.sessionHeaders(tenant.cookie), 'content-type': 'application/json' },
    body: JSON.stringify(change),
  });
  const body = (await response.json()) as { scimBearerToken?: string };
  if (response.status !== 200 || !body.scimBearerToken) throw new Error(`enabling SCIM failed: ${response.status} ${JSON.stringify(body)}`);
  return body.scimBearerToken;
}

export function scimClient(service: Pick<TestService, 'url'>, token: string, contentType = 'application/scim+json'): ScimClient {
  return {
    token,
    async request(method, path, body, headers = {}) {
      const response = await fetch(`${service.url}/api/scim/v2${path}`, {
        method,
        headers: {
          authorization: `Bearer ${token}`,
          accept: 'application/scim+json',
          ...(body === undefined ? {} : { 'content-type': contentType }),
          ...headers,
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const text = await response.text();
      return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : null };
    },
  };
}

/** A tenant with SCIM enabled and a client holding its token. */
export async function scimTenant(service: TestService, contentType?: string) {
  const tenant = await service.createTenant();
  const token = await enableScim(service, tenant);
  return { ...tenant, token, scim: scimClient(service, token, contentType) };
}

export const PATCH_OP = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
export const USER_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:User';
export const GROUP_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:Group';

export function filterPath(resource: 'Users' | 'Groups', filter: string, extra = ''): string {
  return `/${resource}?filter=${encodeURIComponent(filter)}${extra}`;
}
