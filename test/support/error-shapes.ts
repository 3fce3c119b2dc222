// The documented error shapes, by route: the SCIM envelope under /api/scim/v2, OperationOutcome under
// /api/fhir, OAuth's error body (RFC 6749 5.2) under /api/oauth, and the employer error body everywhere else.

export const SCIM_ERROR_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:Error';

/** What is wrong with an error response for a route under `path`, or null when it has its documented shape. */
export function errorShapeProblem(path: string, status: number, contentType: string, text: string): string | null {
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(text) as Record<string, unknown>;
  } catch {
    return `error body is not JSON (${contentType}): ${text.slice(0, 120)}`;
  }
  if (path.startsWith('/api/scim/')) {
    const ok = Array.isArray(body.schemas) && body.schemas[0] === SCIM_ERROR_SCHEMA && body.status === String(status) && typeof body.detail === 'string';
    return ok && contentType.startsWith('application/scim+json') ? null : `not the SCIM error envelope (${contentType}): ${text.slice(0, 200)}`;
  }
  if (path.startsWith('/api/oauth/')) return typeof body.error === 'string' && typeof body.error_description === 'string' ? null : `not an OAuth error body: ${text.slice(0, 200)}`;
  if (path === '/api/fhir' || path.startsWith('/api/fhir/')) return body.resourceType === 'OperationOutcome' ? null : `not an OperationOutcome: ${text.slice(0, 200)}`;
  const ok = typeof body.code === 'string' && typeof body.message === 'string' && typeof body.requestId === 'string';
  return ok ? null : `not the employer error body: ${text.slice(0, 200)}`;
}
