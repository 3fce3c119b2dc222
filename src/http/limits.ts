// The bounds of every request, named once. Each string field a route reads has a maximum length and
// each array a maximum size in its zod schema (so /api/openapi documents them); bodies are bounded in
// bytes before they are parsed. A bound exists so no single request can write a value some read
// model, index or log cannot hold (a 4,000-character SCIM userName once stopped the users projection:
// Postgres refuses btree index entries over 2,704 bytes). Lengths are in UTF-16 code units, as zod
// counts them: at most 3 bytes each in UTF-8, so 256 units stay well inside an index entry.

/** Largest request body on every route that names no other limit. */
export const BODY_LIMIT_BYTES = 1024 * 1024;
/** The request line and headers together (Node's default, stated): 431 past it. */
export const HEADERS_LIMIT_BYTES = 16 * 1024;
/** Nesting of arrays and objects in a JSON body: deeper input is refused before anything walks it recursively. */
export const JSON_DEPTH_MAX = 32;
/** The refusal of a body nested deeper than JSON_DEPTH_MAX, wherever it is found. */
export const JSON_TOO_DEEP = `nested deeper than ${JSON_DEPTH_MAX} levels`;
/**
 * Values in a JSON body (each scalar, array and object counts one), counted while it arrives and refused
 * past the bound before it is parsed: parsing, the storable-input walk and the schema check cost per
 * value. Enough for the largest body of a route without its own budget: a SCIM group of
 * SCIM_GROUP_MEMBERS_MAX members with all four member attributes.
 */
export const JSON_VALUES_MAX = 60_000;
/** A FHIR resource's values: resources of the served types hold tens to hundreds; validating one costs about 15 µs per value. */
export const FHIR_JSON_VALUES_MAX = 2_000;

/** A display name a person types: key name, tenant name, person's given or family name. */
export const NAME_MAX = 200;
/** A free-text description. */
export const DESCRIPTION_MAX = 1_000;
/** Any URL or path we accept (webhook target, SAML endpoints, returnTo). */
export const URL_MAX = 2_048;
/** An e-mail address (RFC 5321: a path is at most 256 octets, the address inside it 254). */
export const EMAIL_MAX = 254;
/** An opaque identifier in a path or query (ids are UUIDs or prefixed tokens, far shorter). */
export const ID_MAX = 100;
/** A short code or type word (a webhook event type, an e-mail type such as "work"). */
export const CODE_MAX = 100;
/** An ISO 8601 timestamp (35 characters with nanoseconds and an offset). */
export const TIMESTAMP_MAX = 64;
/** A one-time sign-in token or a paging cursor. */
export const TOKEN_MAX = 200;
/** Entries in an API key's IP allowlist. */
export const CIDR_LIST_MAX = 100;
/** One CIDR or address in text form (the longest IPv6 form with a prefix is 49 characters). */
export const CIDR_MAX = 100;

/** A SAML attribute name or NameID format (URNs and URIs in practice). */
export const SAML_ATTRIBUTE_MAX = 256;
/** The IdP's entity id. */
export const SAML_ISSUER_MAX = 1_024;
/** PEM text of the IdP's signing certificates: a few certificates during a rollover. */
export const SAML_CERTIFICATE_MAX = 64 * 1024;
/**
 * A SAML response's XML once decoded. Real responses are a few KiB to tens of KiB (Entra ID sends at
 * most 150 group claims); each byte past that only costs parsing.
 */
export const SAML_RESPONSE_XML_MAX_BYTES = 256 * 1024;
/** The base64 SAMLResponse field: SAML_RESPONSE_XML_MAX_BYTES of XML in base64, plus the line breaks some IdPs insert. */
export const SAML_RESPONSE_MAX = 360_000;
/** The SAML callback's form body: SAML_RESPONSE_MAX characters percent-encoded ('+' and '/' take 3 bytes each), and RelayState. */
export const SAML_CALLBACK_BODY_LIMIT_BYTES = 512 * 1024;
/**
 * The shape of a SAML response's XML, checked by a scan of the text before any parser builds a tree
 * (src/sso/saml-checks.ts): parsing costs per element and attribute, about 15 µs and 6 µs each with
 * @xmldom/xmldom. A signed response holding a few hundred attribute values has a few hundred elements
 * and is nested 8 deep.
 */
export const SAML_XML_ELEMENTS_MAX = 2_000;
export const SAML_XML_ATTRIBUTES_MAX = 4_000;
export const SAML_XML_DEPTH_MAX = 24;

/** SCIM userName, externalId, displayName (users and groups): each is indexed. */
export const SCIM_TEXT_MAX = 256;
/** E-mail addresses of one SCIM user. */
export const SCIM_EMAILS_MAX = 10;
/** Members of one SCIM group, in a PUT body and after a PATCH. */
export const SCIM_GROUP_MEMBERS_MAX = 10_000;
/** A SCIM filter, or an attributes/excludedAttributes list. */
export const SCIM_QUERY_MAX = 2_048;
/** Schema URNs in a SCIM PATCH body (one is expected). */
export const SCIM_PATCH_SCHEMAS_MAX = 10;
/** A SCIM PATCH attribute path such as `emails[type eq "work"].value`. */
export const SCIM_PATH_MAX = 1_024;

/** "1 MiB", "64 KiB", "512 bytes": the limit as a person reads it in an error message. */
export function formatBytes(bytes: number): string {
  if (bytes % (1024 * 1024) === 0) return `${bytes / (1024 * 1024)} MiB`;
  if (bytes % 1024 === 0) return `${bytes / 1024} KiB`;
  return `${bytes} bytes`;
}
