// Every route a running fastify instance serves, read from its router (printRoutes), so that a test
// looping over them cannot miss one: routes /api/openapi does not document (hidden ones, the SCIM
// catch-all, the console) are in it too.
import type { FastifyInstance } from 'fastify';

export type RegisteredRoute = { method: string; url: string };

/**
 * One entry per method and URL (fastify's syntax: `/api/fhir/:resourceType`, `/api/scim/v2/*`),
 * without the HEAD fastify adds to every GET. printRoutes draws the router's tree: each line is a
 * node, indented four characters per level, whose label continues its parent's path, followed by the
 * methods of the routes that end there.
 */
export function registeredRoutes(fastify: FastifyInstance): RegisteredRoute[] {
  const labels: string[] = [];
  const routes: RegisteredRoute[] = [];
  for (const line of fastify.printRoutes().split('\n')) {
    const node = /^((?:│ {3}| {4})*)(?:├── |└── )(.+?)(?: \(([A-Z, ]+)\))?$/.exec(line);
    if (!node) continue;
    const depth = node[1]!.length / 4;
    labels.length = depth;
    labels.push(node[2]!);
    for (const method of node[3]?.split(', ') ?? []) {
      if (method !== 'HEAD') routes.push({ method, url: labels.join('') });
    }
  }
  return routes;
}
