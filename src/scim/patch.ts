// SCIM PATCH (RFC 7644 section 3.5.2) as Okta and Entra ID send it. A body is first normalised into
// canonical operations (lower-case op, one operation per attribute path, real booleans, canonical
// attribute names, read-only attributes refused or ignored), then applied with `scim-patch`.
// scim-patch walks the document by the names in paths and in the keys of values (`a.b` keys too), and
// creates what is missing: no path segment, value filter attribute or value key may name a prototype
// member (src/http/prototypes.ts), and the document it walks has no prototypes (applyOperations).
import { scimPatch, type ScimPatchOperation as LibraryOperation, type ScimResource } from 'scim-patch';
import { filter as compileFilter, parse as parseFilter } from 'scim2-parse-filter';
import { z } from 'zod';
import {
  parseOrThrow,
  scimGroupSchema,
  scimUserSchema,
  toScimBoolean,
  type ScimGroupDoc,
  type ScimUserDoc,
} from './attributes.ts';
import { CODE_MAX, SCIM_PATCH_SCHEMAS_MAX, SCIM_PATH_MAX, URL_MAX } from '../http/limits.ts';
import { prototypeNameIn, prototypeNameMessage } from '../http/prototypes.ts';
import { ScimError } from './errors.ts';
import { prototypeNameInFilter } from './filter.ts';

export const SCIM_PATCH_OP_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';

/** Operations per request: far above what an IdP sends (Entra ID sends one per changed attribute). */
export const MAX_PATCH_OPERATIONS = 1000;

/** One canonical operation: always with a path, after every dialect difference is gone. */
export type ScimPatchOperation = { op: 'add' | 'replace' | 'remove'; path: string; value?: unknown };

export const scimPatchRequestSchema = z.object({
  schemas: z.array(z.string().max(URL_MAX)).max(SCIM_PATCH_SCHEMAS_MAX).refine((schemas) => schemas.includes(SCIM_PATCH_OP_SCHEMA), {
    message: `schemas must contain ${SCIM_PATCH_OP_SCHEMA}`,
  }),
  Operations: z
    .array(z.object({ op: z.string().max(CODE_MAX), path: z.string().max(SCIM_PATH_MAX).optional(), value: z.unknown().optional() }).loose())
    .min(1)
    .max(MAX_PATCH_OPERATIONS),
});

/** Validates a PatchOp body and turns each dialect into canonical operations (see the file comment). */
export function normalisePatchRequest(body: unknown): ScimPatchOperation[] {
  const parsed = scimPatchRequestSchema.safeParse(body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    // A bound passed (too many operations, a path too long) is a bad value; anything else a bad structure.
    const scimType = issue?.code === 'too_big' ? 'invalidValue' : 'invalidSyntax';
    throw new ScimError(400, scimType, `Not a SCIM PatchOp request: ${issue?.path.join('.') ?? ''} ${issue?.message ?? ''}`.trim());
  }
  return parsed.data.Operations.flatMap((operation) => normaliseOperation(operation));
}

function normaliseOperation(operation: { op: string; path?: string | undefined; value?: unknown }): ScimPatchOperation[] {
  const op = operation.op.toLowerCase();
  if (op !== 'add' && op !== 'replace' && op !== 'remove') {
    throw new ScimError(400, 'invalidSyntax', `Unknown PATCH op "${operation.op}": use add, replace or remove.`);
  }
  const path = operation.path?.trim() || undefined;
  if (op === 'remove') {
    if (!path) throw new ScimError(400, 'noTarget', 'A remove operation needs a path.');
    return [withValue({ op, path: canonicalPath(path) }, operation.value, path)];
  }
  if (!('value' in operation) || operation.value === undefined) {
    throw new ScimError(400, 'invalidSyntax', `An ${op} operation needs a value.`);
  }
  if (path) return [withValue({ op, path: canonicalPath(path) }, operation.value, path)];
  // No path: the value is an object of attribute paths (Okta `{ active: false }`, Entra ID with
  // aadOptscim062020 `{ "name.givenName": "x", "emails[type eq \"work\"].value": "y" }`), one operation each.
  if (!isPlainObject(operation.value)) {
    throw new ScimError(400, 'invalidValue', `An ${op} operation without a path needs an object of attributes as its value.`);
  }
  return Object.entries(operation.value)
    .filter(([key]) => !isReadOnly(key))
    .map(([key, value]) => withValue({ op, path: canonicalPath(key) }, value, key));
}

function withValue(operation: { op: ScimPatchOperation['op']; path: string }, value: unknown, originalPath: string): ScimPatchOperation {
  if (value === undefined) return operation;
  return { ...operation, value: normaliseValue(lastAttributeName(originalPath), value) };
}

/** Attributes a client cannot change: refused when named by a path, ignored inside a value (Okta sends `id`). */
const READ_ONLY = new Set(['id', 'meta', 'schemas']);

/** Canonical spelling of the attribute names this service keeps; SCIM names are case-insensitive. */
const CANONICAL_NAMES = new Map(
  [
    'userName', 'externalId', 'active', 'displayName', 'name', 'givenName', 'familyName', 'middleName', 'formatted', 'emails', 'value', 'type',
    'primary', 'members', 'title', 'preferredLanguage', 'locale', 'timezone', 'phoneNumbers', 'addresses', 'streetAddress', 'locality',
    'region', 'postalCode', 'country', 'employeeNumber', 'costCenter', 'organization', 'division', 'department', 'manager',
  ].map(
    (name) => [name.toLowerCase(), name],
  ),
);

const BOOLEAN_ATTRIBUTES = new Set(['active', 'primary']);

const PATH = /^(?:(urn:[^[\]]+):)?([A-Za-z$][\w$-]*)(?:\[(.+)\])?(?:\.([A-Za-z$][\w$-]*))?$/;

const CORE_SCHEMA_URN = /^urn:ietf:params:scim:schemas:core:2\.0:(user|group)$/i;

function isReadOnly(path: string): boolean {
  const [, urn, attribute = ''] = PATH.exec(path) ?? [];
  return (urn === undefined || CORE_SCHEMA_URN.test(urn)) && READ_ONLY.has(attribute.toLowerCase());
}

/** The path with the core schema URN dropped and known names in canonical case. */
function canonicalPath(path: string): string {
  const match = PATH.exec(path);
  const [, urn, attribute = '', valueFilter, subAttribute] = match ?? [];
  const filter = valueFilter === undefined ? undefined : parsedValueFilter(valueFilter, path);
  const prototypeName = prototypeNameIn(path) ?? (filter && prototypeNameInFilter(filter));
  if (prototypeName !== undefined) throw new ScimError(400, 'invalidPath', prototypeNameMessage(prototypeName));
  if (!match) throw new ScimError(400, 'invalidPath', `"${path}" is not a valid attribute path.`);
  if (isReadOnly(path)) throw new ScimError(400, 'mutability', `${path} is read-only.`);
  const isCore = urn === undefined || CORE_SCHEMA_URN.test(urn);
  const prefix = isCore ? '' : `${urn}:`;
  const filterPart = valueFilter === undefined ? '' : `[${valueFilter}]`;
  const subPart = subAttribute === undefined ? '' : `.${canonicalName(subAttribute)}`;
  return `${prefix}${canonicalName(attribute)}${filterPart}${subPart}`;
}

function parsedValueFilter(valueFilter: string, path: string) {
  try {
    return parseFilter(valueFilter);
  } catch {
    throw new ScimError(400, 'invalidPath', `"${path}" has an invalid value filter.`);
  }
}

function canonicalName(name: string): string {
  return CANONICAL_NAMES.get(name.toLowerCase()) ?? name;
}

function lastAttributeName(path: string): string {
  return /([A-Za-z$][\w$-]*)$/.exec(path)?.[1] ?? path;
}

/**
 * Canonical key names inside values, and real booleans for boolean attributes ("False" -> false). A
 * key naming a prototype member is invalidValue: scim-patch reads keys as paths.
 */
function normaliseValue(attributeName: string, value: unknown): unknown {
  if (BOOLEAN_ATTRIBUTES.has(attributeName.toLowerCase())) {
    const boolean = toScimBoolean(value);
    if (typeof boolean !== 'boolean') throw new ScimError(400, 'invalidValue', `${attributeName} must be true or false.`);
    return boolean;
  }
  // Entra ID sends the enterprise manager as the manager's id alone; it is a complex attribute.
  if (attributeName.toLowerCase() === 'manager' && typeof value === 'string') return { value };
  if (Array.isArray(value)) return value.map((entry) => normaliseValue(attributeName, entry));
  if (isPlainObject(value)) {
    return Object.fromEntries(
      Object.entries(value).map(([key, entry]) => {
        const prototypeName = prototypeNameIn(key);
        if (prototypeName !== undefined) throw new ScimError(400, 'invalidValue', prototypeNameMessage(prototypeName));
        return [canonicalName(key), normaliseValue(key, entry)];
      }),
    );
  }
  return value;
}

/** Applies a PATCH body to a user; throws ScimError 400 (invalidSyntax, invalidPath, invalidValue, mutability, noTarget). */
export function applyUserPatch(user: ScimUserDoc, patchBody: unknown): ScimUserDoc {
  return applyOperations(user, normalisePatchRequest(patchBody), (patched) => parseOrThrow(scimUserSchema, patched));
}

export type GroupPatchResult = { doc: ScimGroupDoc; membersAdded: string[]; membersRemoved: string[] };

/** Applies a PATCH body to a group and reports which member ids it added and removed. */
export function applyGroupPatch(group: ScimGroupDoc, patchBody: unknown): GroupPatchResult {
  const operations = normalisePatchRequest(patchBody).map(withMemberValuesOnly);
  const doc = applyOperations(group, operations, (patched) => parseOrThrow(scimGroupSchema, patched));
  const before = new Set(group.members.map((member) => member.value));
  const after = new Set(doc.members.map((member) => member.value));
  return {
    doc,
    membersAdded: [...after].filter((id) => !before.has(id)),
    membersRemoved: [...before].filter((id) => !after.has(id)),
  };
}

/**
 * Members are compared by value alone: Okta adds `{ value, display }`, Entra ID removes `{ value }`,
 * and scim-patch matches removal values by deep equality.
 */
function withMemberValuesOnly(operation: ScimPatchOperation): ScimPatchOperation {
  if (operation.path !== 'members' || operation.value === undefined) return operation;
  const entries = Array.isArray(operation.value) ? operation.value : [operation.value];
  const members = entries.map((entry) => {
    const value: unknown = isPlainObject(entry) ? entry.value : undefined;
    if (typeof value !== 'string' || value.trim() === '') {
      throw new ScimError(400, 'invalidValue', 'Each member must be an object with a string value (the user id).');
    }
    return { value: value.trim() };
  });
  return { ...operation, value: members };
}

/**
 * Applies operations one at a time, re-reading the document after each so that the next one sees
 * the service's shape again (scim-patch deletes an emptied multi-valued attribute, for instance).
 * scim-patch works on a copy without prototypes (its own copy, mutateDocument false, would be JSON's
 * and have them): a name it looks up is the document's own or absent. It needs no schemas or meta.
 */
function applyOperations<T extends object>(doc: T, operations: ScimPatchOperation[], toDoc: (patched: unknown) => T): T {
  return operations.reduce((current, operation) => {
    if (operation.op === 'remove' && removesNothing(current, operation.path)) return current;
    let patched: unknown;
    try {
      patched = scimPatch(withoutPrototypes(current) as ScimResource, [operation as LibraryOperation], { mutateDocument: true, treatMissingAsAdd: true });
    } catch (error) {
      throw fromLibraryError(error, operation.path);
    }
    return toDoc(patched);
  }, doc);
}

/**
 * A copy of `value` whose objects have no prototype, but for the entries of arrays: scim-patch compares
 * those with fast-deep-equal, which needs their valueOf. It reaches entries only through a value
 * filter, and sets on them only the checked names of paths and value keys.
 */
function withoutPrototypes(value: unknown): unknown {
  if (Array.isArray(value)) return structuredClone(value);
  if (value === null || typeof value !== 'object') return value;
  return Object.setPrototypeOf(Object.fromEntries(Object.entries(value).map(([key, entry]) => [key, withoutPrototypes(entry)])), null);
}

/** Removing a filtered value that is not there leaves the resource as it is (scim-patch would throw). */
function removesNothing(doc: object, path: string): boolean {
  const match = /^([^[]+)\[(.+)\]/.exec(path);
  if (!match?.[1] || !match[2]) return false;
  const values: unknown = (doc as Record<string, unknown>)[match[1]];
  if (!Array.isArray(values)) return true;
  const matches = compileFilter(parseFilter(match[2]));
  return !values.some((value) => matches(value));
}

function fromLibraryError(error: unknown, path: string): ScimError {
  if (error instanceof ScimError) return error;
  const message = error instanceof Error ? error.message : String(error);
  const scimCode = (error as { scimCode?: unknown } | null)?.scimCode;
  if (scimCode === 'noTarget') return new ScimError(400, 'noTarget', message);
  return new ScimError(400, 'invalidValue', `Cannot apply the operation on ${path}: ${message}`);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
