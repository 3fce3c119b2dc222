// SCIM errors (RFC 7644 section 3.12, SPEC section 7.4): every SCIM route and the SCIM token check
// answer in this envelope. Thrown by the pure SCIM modules; the routes turn it into a response.

export const SCIM_ERROR_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:Error';

/** The scimType values RFC 7644 table 9 defines (400 and 409 errors only). */
export const SCIM_ERROR_TYPES = ['invalidFilter', 'tooMany', 'uniqueness', 'mutability', 'invalidSyntax', 'invalidPath', 'noTarget', 'invalidValue', 'invalidVers', 'sensitive'] as const;
export type ScimErrorType = (typeof SCIM_ERROR_TYPES)[number];

export type ScimErrorBody = {
  schemas: [typeof SCIM_ERROR_SCHEMA];
  /** RFC 7644 makes the status a string. */
  status: string;
  scimType?: ScimErrorType;
  detail: string;
};

export class ScimError extends Error {
  readonly status: number;
  readonly scimType: ScimErrorType | undefined;

  /** `scimType` is null for statuses RFC 7644 gives none (401, 403, 404, 412, 429, 500, ...). */
  constructor(status: number, scimType: ScimErrorType | null, detail: string) {
    super(detail);
    this.name = 'ScimError';
    this.status = status;
    this.scimType = scimType ?? undefined;
  }
}

export function toScimErrorBody(error: ScimError): ScimErrorBody {
  return {
    schemas: [SCIM_ERROR_SCHEMA],
    status: String(error.status),
    ...(error.scimType ? { scimType: error.scimType } : {}),
    detail: error.message,
  };
}
