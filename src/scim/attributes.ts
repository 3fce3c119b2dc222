// The SCIM attributes this service keeps for users and groups (SPEC 2.5), the zod schemas that read
// them from POST/PUT bodies and PATCH results, and the `attributes`/`excludedAttributes` selection.
import { z } from 'zod';
import { EMAIL_MAX, CODE_MAX, ID_MAX, NAME_MAX, SCIM_EMAILS_MAX, SCIM_GROUP_MEMBERS_MAX, SCIM_QUERY_MAX, SCIM_TEXT_MAX } from '../http/limits.ts';
import { prototypeNameIn, prototypeNameMessage } from '../http/prototypes.ts';
import { ScimError } from './errors.ts';

export const SCIM_USER_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:User';
export const SCIM_GROUP_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:Group';

export const SCIM_ENTERPRISE_USER_SCHEMA = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';

export type ScimEmail = { value: string; type?: string; primary?: boolean };
export type ScimName = { givenName?: string; familyName?: string; middleName?: string; formatted?: string };
export type ScimPhoneNumber = ScimEmail;
export type ScimAddress = {
  formatted?: string;
  streetAddress?: string;
  locality?: string;
  region?: string;
  postalCode?: string;
  country?: string;
  type?: string;
  primary?: boolean;
};
export type ScimEnterpriseUser = {
  employeeNumber?: string;
  costCenter?: string;
  organization?: string;
  division?: string;
  department?: string;
  manager?: { value?: string; displayName?: string };
};
export type ScimUserDoc = {
  userName: string;
  externalId?: string;
  active: boolean;
  displayName?: string;
  name?: ScimName;
  title?: string;
  preferredLanguage?: string;
  locale?: string;
  timezone?: string;
  emails: ScimEmail[];
  phoneNumbers?: ScimPhoneNumber[];
  addresses?: ScimAddress[];
  [SCIM_ENTERPRISE_USER_SCHEMA]?: ScimEnterpriseUser;
};
export type ScimGroupMember = { value: string };
export type ScimGroupDoc = { displayName: string; externalId?: string; members: ScimGroupMember[] };

/** Entra ID sends booleans as the strings "True"/"False" (without its aadOptscim062020 flag). */
export function toScimBoolean(value: unknown): unknown {
  if (typeof value === 'string' && /^(true|false)$/i.test(value)) return value.toLowerCase() === 'true';
  return value;
}

export const scimBooleanSchema = z.preprocess(toScimBoolean, z.boolean());

/** An absent optional attribute may arrive as null (a cleared value); it is then unassigned. */
const optionalString = (max: number) =>
  z
    .string()
    .max(max)
    .nullish()
    .transform((value) => value ?? undefined);

const emailSchema = z.object({
  value: z.string().trim().min(1).max(EMAIL_MAX),
  type: optionalString(CODE_MAX),
  primary: scimBooleanSchema.optional(),
});

const nameSchema = z.object({
  givenName: optionalString(NAME_MAX),
  familyName: optionalString(NAME_MAX),
  middleName: optionalString(NAME_MAX),
  formatted: optionalString(SCIM_TEXT_MAX),
});

const phoneNumberSchema = z.object({
  value: z.string().trim().min(1).max(SCIM_TEXT_MAX),
  type: optionalString(CODE_MAX),
  primary: scimBooleanSchema.optional(),
});

const addressSchema = z
  .object({
    formatted: optionalString(SCIM_TEXT_MAX),
    streetAddress: optionalString(SCIM_TEXT_MAX),
    locality: optionalString(SCIM_TEXT_MAX),
    region: optionalString(SCIM_TEXT_MAX),
    postalCode: optionalString(CODE_MAX),
    country: optionalString(CODE_MAX),
    type: optionalString(CODE_MAX),
    primary: scimBooleanSchema.optional(),
  })
  .transform((address): ScimAddress => withoutUndefined(address));

/** A multi-valued complex attribute: at most `max` values; none (absent, null, empty) is unassigned. */
const multiValued = <T extends z.ZodType>(value: T, max: number) =>
  z
    .array(value)
    .max(max)
    .nullish()
    .transform((values): z.infer<T>[] | undefined => (values && values.length > 0 ? values : undefined));

/** The manager as a reference (RFC 7643 4.3); Entra ID sends the manager's id as a bare string too. */
const managerSchema = z.preprocess(
  (manager) => (typeof manager === 'string' ? { value: manager } : manager),
  z.object({ value: optionalString(SCIM_TEXT_MAX), displayName: optionalString(SCIM_TEXT_MAX) }),
);

const enterpriseUserSchema = z
  .object({
    employeeNumber: optionalString(SCIM_TEXT_MAX),
    costCenter: optionalString(SCIM_TEXT_MAX),
    organization: optionalString(SCIM_TEXT_MAX),
    division: optionalString(SCIM_TEXT_MAX),
    department: optionalString(SCIM_TEXT_MAX),
    manager: managerSchema.nullish().transform((manager) => (manager?.value || manager?.displayName ? withoutUndefined(manager) : undefined)),
  })
  .transform((extension): ScimEnterpriseUser | undefined => {
    const kept = withoutUndefined(extension);
    return Object.keys(kept).length > 0 ? kept : undefined;
  });

/**
 * A User from a POST or PUT body (Okta, Entra ID) or a PATCH result. Attributes the service does not
 * keep (password, nickName, profileUrl, photos, ims, roles, groups, id, meta, ...) are dropped, not refused.
 */
export const scimUserSchema = z
  .object({
    userName: z.string().trim().min(1).max(SCIM_TEXT_MAX),
    externalId: optionalString(SCIM_TEXT_MAX),
    active: scimBooleanSchema.default(true),
    displayName: optionalString(SCIM_TEXT_MAX),
    name: nameSchema.nullish().transform((value) => {
      const name = value ? withoutUndefined(value) : {};
      return Object.keys(name).length > 0 ? name : undefined;
    }),
    title: optionalString(SCIM_TEXT_MAX),
    preferredLanguage: optionalString(CODE_MAX),
    locale: optionalString(CODE_MAX),
    timezone: optionalString(CODE_MAX),
    phoneNumbers: multiValued(phoneNumberSchema, SCIM_EMAILS_MAX),
    addresses: multiValued(addressSchema, SCIM_EMAILS_MAX),
    [SCIM_ENTERPRISE_USER_SCHEMA]: enterpriseUserSchema.nullish().transform((value) => value ?? undefined),
    // An e-mail whose value was removed (PATCH remove emails[type eq "work"].value) is no e-mail.
    emails: z
      .preprocess(
        (emails) => (Array.isArray(emails) ? emails.filter((email) => typeof email?.value === 'string') : emails),
        z.array(emailSchema).max(SCIM_EMAILS_MAX),
      )
      .nullish()
      .transform((value) => value ?? []),
  })
  .transform((user): ScimUserDoc => withoutUndefined(user));

/** A Group from a POST or PUT body or a PATCH result; members keep only their value (the user id). */
export const scimGroupSchema = z
  .object({
    displayName: z.string().trim().min(1).max(SCIM_TEXT_MAX),
    externalId: optionalString(SCIM_TEXT_MAX),
    members: z
      .array(z.object({ value: z.string().trim().min(1).max(ID_MAX) }))
      .max(SCIM_GROUP_MEMBERS_MAX)
      .nullish()
      .transform((members) => uniqueMembers(members ?? [])),
  })
  .transform((group): ScimGroupDoc => withoutUndefined(group));

/** Reads a POST/PUT User body; throws ScimError 400 invalidValue naming the bad attribute. */
export function parseScimUser(body: unknown): ScimUserDoc {
  return parseOrThrow(scimUserSchema, body);
}

/** Reads a POST/PUT Group body; throws ScimError 400 invalidValue naming the bad attribute. */
export function parseScimGroup(body: unknown): ScimGroupDoc {
  return parseOrThrow(scimGroupSchema, body);
}

export function parseOrThrow<T>(schema: z.ZodType<T>, value: unknown): T {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const where = issue && issue.path.length > 0 ? `${issue.path.join('.')}: ` : '';
  throw new ScimError(400, 'invalidValue', `${where}${issue?.message ?? 'invalid value'}`);
}

function uniqueMembers(members: ScimGroupMember[]): ScimGroupMember[] {
  const values = [...new Set(members.map((member) => member.value))];
  return values.map((value) => ({ value }));
}

function withoutUndefined<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, entry]) => entry !== undefined)) as T;
}

/** Attributes returned whatever `attributes`/`excludedAttributes` say (RFC 7643 "returned: always"). */
const ALWAYS_RETURNED = new Set(['schemas', 'id']);

/**
 * Applies the `attributes` or `excludedAttributes` query parameter (RFC 7644 section 3.4.2.5) to a
 * resource as it would be returned: comma-separated, case-insensitive paths such as `userName`,
 * `name.givenName`, `members`, optionally with the core schema URN. `attributes` wins when both are given.
 */
export function selectAttributes(
  resource: Record<string, unknown>,
  selection: { attributes?: string | undefined; excludedAttributes?: string | undefined },
): Record<string, unknown> {
  const requested = parseAttributeList(selection.attributes);
  if (requested.length > 0) return pick(resource, requested);
  const excluded = parseAttributeList(selection.excludedAttributes);
  return excluded.length > 0 ? omit(resource, excluded) : resource;
}

/**
 * The `attributes` or `excludedAttributes` query parameter: refused (400 invalidValue, before any
 * work) when a path names a prototype member (src/http/prototypes.ts).
 */
export const attributeListSchema = z
  .string()
  .max(SCIM_QUERY_MAX)
  .superRefine((list, context) => {
    const prototypeName = list.split(',').map(prototypeNameIn).find((name) => name !== undefined);
    if (prototypeName !== undefined) context.addIssue({ code: 'custom', message: prototypeNameMessage(prototypeName) });
  });

type AttributeReference = { attribute: string; subAttribute?: string };

function parseAttributeList(list: string | undefined): AttributeReference[] {
  if (!list) return [];
  return list
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry.length > 0)
    .map((entry) => {
      const path = entry.toLowerCase().replace(/^urn:ietf:params:scim:schemas:core:2\.0:(user|group):/, '');
      // An extension attribute: the URN is the top-level key, the name after its last colon the sub-attribute.
      const extension = /^(urn:.+):([^:]+)$/.exec(path);
      if (extension?.[1] && extension[2]) return { attribute: extension[1], subAttribute: extension[2] };
      const [attribute = '', subAttribute] = path.split('.', 2);
      return subAttribute ? { attribute, subAttribute } : { attribute };
    });
}

function pick(resource: Record<string, unknown>, requested: AttributeReference[]): Record<string, unknown> {
  const picked: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(resource)) {
    const lowerKey = key.toLowerCase();
    if (ALWAYS_RETURNED.has(lowerKey)) {
      picked[key] = value;
      continue;
    }
    const references = requested.filter((reference) => reference.attribute === lowerKey);
    if (references.length === 0) continue;
    if (references.some((reference) => !reference.subAttribute)) {
      picked[key] = value;
      continue;
    }
    const subAttributes = new Set(references.map((reference) => reference.subAttribute));
    picked[key] = mapComplex(value, (entry) => Object.fromEntries(Object.entries(entry).filter(([name]) => subAttributes.has(name.toLowerCase()))));
  }
  return picked;
}

function omit(resource: Record<string, unknown>, excluded: AttributeReference[]): Record<string, unknown> {
  const kept: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(resource)) {
    const lowerKey = key.toLowerCase();
    const references = excluded.filter((reference) => reference.attribute === lowerKey);
    if (ALWAYS_RETURNED.has(lowerKey) || references.length === 0) {
      kept[key] = value;
      continue;
    }
    if (references.some((reference) => !reference.subAttribute)) continue;
    const subAttributes = new Set(references.map((reference) => reference.subAttribute));
    kept[key] = mapComplex(value, (entry) => Object.fromEntries(Object.entries(entry).filter(([name]) => !subAttributes.has(name.toLowerCase()))));
  }
  return kept;
}

/** Applies a change to a complex attribute, or to each value of a multi-valued complex attribute. */
function mapComplex(value: unknown, change: (entry: Record<string, unknown>) => Record<string, unknown>): unknown {
  if (Array.isArray(value)) return value.map((entry) => mapComplex(entry, change));
  if (value !== null && typeof value === 'object') return change(value as Record<string, unknown>);
  return value;
}
