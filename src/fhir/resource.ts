// A stored resource's content (what its events seal) and the resource as served (with id and meta).
import type { FhirJson } from './search-parameters.ts';

/** The parts of a resource the client owns: everything but its type, id and meta. */
export function contentOf(resource: FhirJson): FhirJson {
  const { resourceType: _type, id: _id, meta: _meta, ...content } = resource;
  return content;
}

/** The resource as the read model keeps it and the API serves it. */
export function withMeta(resourceType: string, id: string, versionId: number, lastUpdated: string, content: FhirJson): FhirJson {
  return { resourceType, id, meta: { versionId: String(versionId), lastUpdated }, ...content };
}
