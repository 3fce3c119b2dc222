// The checks on a SAML response that node-saml 5.1 leaves to its caller, as pure functions over the
// DOM. saml.ts decides which DOM each one reads: the raw message only to refuse early with a precise
// reason, the assertion bytes node-saml verified for everything that is then trusted.
import { DOMParser, onErrorStopParsing } from '@xmldom/xmldom';
import type { Document, Element } from '@xmldom/xmldom';
import type { SamlFailureReason } from './events.ts';

/** A refused SAML response: `reason` is for code and audit records, `message` for people. */
export class SamlValidationError extends Error {
  readonly reason: SamlFailureReason;

  constructor(reason: SamlFailureReason, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'SamlValidationError';
    this.reason = reason;
  }
}

export const NS = {
  protocol: 'urn:oasis:names:tc:SAML:2.0:protocol',
  assertion: 'urn:oasis:names:tc:SAML:2.0:assertion',
  dsig: 'http://www.w3.org/2000/09/xmldsig#',
} as const;

const SUCCESS_STATUS = 'urn:oasis:names:tc:SAML:2.0:status:Success';
const BEARER_METHOD = 'urn:oasis:names:tc:SAML:2.0:cm:bearer';
export const UNSPECIFIED_NAME_ID_FORMAT = 'urn:oasis:names:tc:SAML:1.1:nameid-format:unspecified';

// What xml-crypto (used by node-saml) verifies, minus SHA-1.
const ALLOWED_SIGNATURE_ALGORITHMS = new Set([
  'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256',
  'http://www.w3.org/2001/04/xmldsig-more#rsa-sha512',
]);
const ALLOWED_DIGEST_ALGORITHMS = new Set([
  'http://www.w3.org/2001/04/xmlenc#sha256',
  'http://www.w3.org/2001/04/xmlenc#sha512',
]);

export type XmlBudget = { elements: number; attributes: number; depth: number };

/**
 * Counts elements, attributes and nesting in one pass over the text, stopping at the first bound passed,
 * before any parser builds a tree: a parse costs per node, so a small body of many nodes could cost
 * seconds. Exact for well-formed XML, where '<' starts markup everywhere outside comments, CDATA
 * sections and processing instructions; whatever else the text is, the parser refuses it afterwards.
 */
export function requireXmlWithinBudget(xml: string, budget: XmlBudget): void {
  const refuse = (what: string) => {
    throw new SamlValidationError('MALFORMED', `The SAML message has more ${what} than a SAML response holds.`);
  };
  let elements = 0;
  let attributes = 0;
  let depth = 0;
  let open = xml.indexOf('<');
  while (open !== -1) {
    const next = xml[open + 1];
    let close: number;
    if (next === '/') {
      depth -= 1;
      close = xml.indexOf('>', open);
    } else if (next === '!' || next === '?') {
      const terminator = xml.startsWith('<!--', open) ? '-->' : xml.startsWith('<![CDATA[', open) ? ']]>' : next === '?' ? '?>' : '>';
      close = xml.indexOf(terminator, open);
    } else {
      // A start tag: its end is the first '>' outside quoted attribute values.
      let quote = '';
      close = -1;
      for (let index = open + 1; index < xml.length; index++) {
        const char = xml[index];
        if (quote) {
          if (char === quote) quote = '';
        } else if (char === '"' || char === "'") quote = char;
        else if (char === '=') attributes += 1;
        else if (char === '>') {
          close = index;
          break;
        }
      }
      elements += 1;
      if (xml[close - 1] !== '/') depth += 1;
      if (elements > budget.elements) refuse('elements');
      if (attributes > budget.attributes) refuse('attributes');
      if (depth > budget.depth) refuse('levels of nesting');
    }
    if (close === -1) return;
    open = xml.indexOf('<', close);
  }
}

/** Parses XML strictly; a DTD is refused outright (no entity expansion, nothing SAML needs). */
export function parseSamlXml(xml: string): Document {
  if (/<!DOCTYPE/i.test(xml)) throw new SamlValidationError('MALFORMED', 'The SAML message carries a DTD, which is not allowed.');
  try {
    return new DOMParser({ onError: onErrorStopParsing }).parseFromString(xml, 'text/xml');
  } catch (error) {
    throw new SamlValidationError('MALFORMED', 'The SAML message is not well-formed XML.', { cause: error });
  }
}

export function childElements(parent: Element, namespace: string, localName: string): Element[] {
  return Array.from(parent.childNodes).filter(
    (node): node is Element => node.nodeType === node.ELEMENT_NODE && (node as Element).namespaceURI === namespace && (node as Element).localName === localName,
  );
}

export function firstChild(parent: Element, namespace: string, localName: string): Element | undefined {
  return childElements(parent, namespace, localName)[0];
}

function descendants(root: Document | Element, namespace: string, localName: string): Element[] {
  return Array.from(root.getElementsByTagNameNS(namespace, localName));
}

export function requireResponseRoot(doc: Document): Element {
  const root = doc.documentElement;
  if (!root || root.namespaceURI !== NS.protocol || root.localName !== 'Response') {
    throw new SamlValidationError('MALFORMED', 'The message is not a SAML 2.0 Response.');
  }
  return root;
}

/** Every signature anywhere in the message must use SHA-256 or SHA-512, for signing and digests alike. */
export function refuseWeakAlgorithms(doc: Document): void {
  for (const signature of descendants(doc, NS.dsig, 'Signature')) {
    const signatureAlgorithms = descendants(signature, NS.dsig, 'SignatureMethod').map((e) => e.getAttribute('Algorithm') ?? '');
    const digestAlgorithms = descendants(signature, NS.dsig, 'DigestMethod').map((e) => e.getAttribute('Algorithm') ?? '');
    const all = [...signatureAlgorithms, ...digestAlgorithms];
    if (all.some((algorithm) => /sha1$/i.test(algorithm))) {
      throw new SamlValidationError('SHA1_REFUSED', 'The SAML signature uses SHA-1, which is refused; configure the IdP to sign with SHA-256.');
    }
    const allowed = signatureAlgorithms.every((a) => ALLOWED_SIGNATURE_ALGORITHMS.has(a)) && digestAlgorithms.every((a) => ALLOWED_DIGEST_ALGORITHMS.has(a));
    if (!allowed || signatureAlgorithms.length === 0 || digestAlgorithms.length === 0) {
      throw new SamlValidationError('ALGORITHM_REFUSED', `The SAML signature uses an algorithm other than RSA-SHA256/512: ${all.join(', ')}.`);
    }
  }
}

/** node-saml reads an assertion without looking at the status, so an IdP error must be caught here. */
export function requireSuccessStatus(response: Element): void {
  const statusCode = firstChild(firstChild(response, NS.protocol, 'Status') ?? response, NS.protocol, 'StatusCode');
  const value = statusCode?.getAttribute('Value');
  if (value !== SUCCESS_STATUS) {
    throw new SamlValidationError('IDP_STATUS_ERROR', `The identity provider answered with status ${value ?? '(none)'} instead of Success.`);
  }
}

/**
 * Exactly one plain assertion in the whole document, as a direct child of the Response. node-saml only
 * counts direct children; an assertion hidden deeper (Extensions, Object, a nested Response) is the
 * classic signature-wrapping shape, so it is refused before any signature is looked at.
 */
/**
 * The response's one assertion: `{ assertion }` in clear, or `{ encrypted }` (an EncryptedAssertion, the
 * Response's child, whose content only decryption shows; node-saml then requires its signature or the
 * Response's). Refused: more than one of either or both, or one elsewhere than as the Response's child.
 */
export function requireSingleAssertion(doc: Document, response: Element): { assertion: Element } | { encrypted: Element } {
  const assertions = descendants(doc, NS.assertion, 'Assertion');
  const encrypted = descendants(doc, NS.assertion, 'EncryptedAssertion');
  if (assertions.length + encrypted.length > 1) {
    throw new SamlValidationError('MULTIPLE_ASSERTIONS', 'The SAML response carries more than one assertion, which is refused (signature wrapping).');
  }
  const [assertion = encrypted[0]] = assertions;
  if (!assertion || assertion.parentNode !== response) {
    throw new SamlValidationError('MALFORMED', 'The SAML response carries no assertion.');
  }
  return assertions.length > 0 ? { assertion } : { encrypted: assertion };
}

/** Refuses early, with a precise reason, a response in which neither the Response nor the Assertion is signed. */
export function requireSomeSignature(response: Element, assertion: Element): void {
  if (childElements(response, NS.dsig, 'Signature').length === 0 && childElements(assertion, NS.dsig, 'Signature').length === 0) {
    throw new SamlValidationError('UNSIGNED', 'Neither the SAML response nor its assertion is signed.');
  }
}

export function requireIssuer(element: Element, expectedIssuer: string, what: string, required: boolean): void {
  const issuer = firstChild(element, NS.assertion, 'Issuer');
  if (!issuer && !required) return;
  const value = issuer?.textContent?.trim();
  if (value !== expectedIssuer) {
    throw new SamlValidationError('ISSUER_MISMATCH', `The ${what} issuer is ${value ?? '(none)'}, not the configured IdP issuer ${expectedIssuer}.`);
  }
}

export function requireDestination(response: Element, acsUrl: string): void {
  const destination = response.getAttribute('Destination');
  if (destination !== acsUrl) {
    throw new SamlValidationError('DESTINATION_MISMATCH', `The SAML response is addressed to ${destination ?? '(no Destination)'}, not to this ACS URL ${acsUrl}.`);
  }
}

function parseInstant(value: string, attribute: string): Date {
  const date = new Date(value);
  if (Number.isNaN(date.getTime())) throw new SamlValidationError('MALFORMED', `The SAML ${attribute} value is not a timestamp.`);
  return date;
}

function optionalInstant(element: Element | undefined, attribute: string): Date | undefined {
  const value = element?.getAttribute(attribute);
  return value ? parseInstant(value, attribute) : undefined;
}

export type BearerConfirmation = { inResponseTo: string | null; notOnOrAfter: Date };

/**
 * The Web SSO profile's bearer SubjectConfirmationData: Recipient must be our ACS URL, it must be inside its
 * time window (NotOnOrAfter is required by the profile), and it must answer a request (no IdP-initiated login).
 */
/** `allowUnsolicited`: an assertion answering no request (no InResponseTo) passes, as IdP-initiated. */
export function requireBearerConfirmation(assertion: Element, acsUrl: string, clockSkewMs: number, now: Date, allowUnsolicited: boolean): BearerConfirmation {
  const subject = firstChild(assertion, NS.assertion, 'Subject');
  const bearerData = (subject ? childElements(subject, NS.assertion, 'SubjectConfirmation') : [])
    .filter((confirmation) => confirmation.getAttribute('Method') === BEARER_METHOD)
    .flatMap((confirmation) => childElements(confirmation, NS.assertion, 'SubjectConfirmationData'));
  if (bearerData.length === 0) {
    throw new SamlValidationError('MALFORMED', 'The SAML assertion has no bearer SubjectConfirmationData.');
  }
  // One confirmation for our ACS URL is the norm; if an IdP sends several, the first one decides.
  const data = bearerData.find((candidate) => candidate.getAttribute('Recipient') === acsUrl);
  if (!data) {
    const recipients = bearerData.map((candidate) => candidate.getAttribute('Recipient') ?? '(none)').join(', ');
    throw new SamlValidationError('RECIPIENT_MISMATCH', `The SAML assertion's Recipient is ${recipients}, not this ACS URL ${acsUrl}.`);
  }
  const notBefore = optionalInstant(data, 'NotBefore');
  const notOnOrAfter = optionalInstant(data, 'NotOnOrAfter');
  if (!notOnOrAfter) throw new SamlValidationError('MALFORMED', 'The SAML SubjectConfirmationData has no NotOnOrAfter.');
  if (notBefore && now.getTime() + clockSkewMs < notBefore.getTime()) {
    throw new SamlValidationError('NOT_YET_VALID', 'The SAML assertion is not valid yet (check the clocks of the IdP and this server).');
  }
  if (now.getTime() - clockSkewMs >= notOnOrAfter.getTime()) {
    throw new SamlValidationError('EXPIRED', 'The SAML assertion has expired; sign in again.');
  }
  const inResponseTo = data.getAttribute('InResponseTo') || null;
  if (!inResponseTo && !allowUnsolicited) {
    throw new SamlValidationError('UNKNOWN_IN_RESPONSE_TO', 'The SAML assertion answers no sign-in request (IdP-initiated sign-in is off for this employer); start from this application.');
  }
  return { inResponseTo, notOnOrAfter };
}

/** The Response's own InResponseTo is unsigned when only the assertion is signed: it may only agree. */
export function requireAgreeingResponseInResponseTo(response: Element, signedInResponseTo: string | null): void {
  const responseInResponseTo = response.getAttribute('InResponseTo');
  if (responseInResponseTo && responseInResponseTo !== signedInResponseTo) {
    throw new SamlValidationError('UNKNOWN_IN_RESPONSE_TO', 'The SAML response and its signed assertion answer different sign-in requests.');
  }
}

export type AssertionContent = {
  assertionId: string;
  nameId: string;
  nameIdFormat: string;
  conditionsNotOnOrAfter?: Date;
  sessionNotOnOrAfter?: Date;
  attributes: Record<string, string[]>;
};

export function readAssertionContent(assertion: Element): AssertionContent {
  const assertionId = assertion.getAttribute('ID');
  const subject = firstChild(assertion, NS.assertion, 'Subject');
  const nameIdElement = subject && firstChild(subject, NS.assertion, 'NameID');
  const nameId = nameIdElement?.textContent?.trim();
  if (!assertionId || !nameIdElement || !nameId) {
    throw new SamlValidationError('MALFORMED', 'The SAML assertion lacks an ID or a NameID.');
  }
  const attributes: Record<string, string[]> = {};
  for (const statement of childElements(assertion, NS.assertion, 'AttributeStatement')) {
    for (const attribute of childElements(statement, NS.assertion, 'Attribute')) {
      const name = attribute.getAttribute('Name');
      if (!name) continue;
      const values = childElements(attribute, NS.assertion, 'AttributeValue').map((value) => value.textContent?.trim() ?? '');
      attributes[name] = [...(attributes[name] ?? []), ...values.filter((value) => value !== '')];
    }
  }
  return {
    assertionId,
    nameId,
    nameIdFormat: nameIdElement.getAttribute('Format') || UNSPECIFIED_NAME_ID_FORMAT,
    conditionsNotOnOrAfter: optionalInstant(firstChild(assertion, NS.assertion, 'Conditions'), 'NotOnOrAfter'),
    sessionNotOnOrAfter: optionalInstant(firstChild(assertion, NS.assertion, 'AuthnStatement'), 'SessionNotOnOrAfter'),
    attributes,
  };
}
