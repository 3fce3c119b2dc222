// IdP metadata (SAML 2.0 metadata XML) fetched from the URL an admin gives, SSRF-safe through the same
// address checks and dispatcher as webhook deliveries, and read for what the SP needs: the entity id
// (issuer), the HTTP-Redirect SingleSignOnService (entry point) and the signing certificates.
import { DOMParser, onErrorStopParsing } from '@xmldom/xmldom';
import type { Element } from '@xmldom/xmldom';
import { request } from 'undici';
import { DomainError } from '../event-store/decider.ts';
import { assertSafeTargetUrl, createSafeDispatcher, UnsafeTargetError } from '../net/safe-target.ts';
import { parseCertificates } from './settings-input.ts';

/** `logoutUrl`: the IdP's HTTP-Redirect SingleLogoutService, when it offers one over https. */
export type IdpMetadata = { issuer: string; entryPoint: string; logoutUrl: string | null; certificates: string[] };

export type MetadataFetchOptions = {
  allowPrivateNetworks: boolean;
  /** Tests only: trust this CA for the metadata host (see createSafeDispatcher). */
  ca?: string;
};

/**
 * How the service fetches metadata: WEBHOOK_ALLOW_PRIVATE_NETWORKS (development and tests only) lets it
 * reach private and loopback addresses, as for webhook receivers.
 */
export function metadataFetchOptionsOf(config: { WEBHOOK_ALLOW_PRIVATE_NETWORKS: boolean }, ca: string | undefined): MetadataFetchOptions {
  return { allowPrivateNetworks: config.WEBHOOK_ALLOW_PRIVATE_NETWORKS, ...(ca ? { ca } : {}) };
}

const FETCH_TIMEOUT_MS = 10_000;
// Metadata of one IdP is a few KiB; federation aggregates (not supported) are megabytes.
const MAX_METADATA_BYTES = 1024 * 1024;
const MD = 'urn:oasis:names:tc:SAML:2.0:metadata';
const DSIG = 'http://www.w3.org/2000/09/xmldsig#';
const REDIRECT_BINDING = 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect';

const invalid = (message: string) => new DomainError('invalid', 'SAML_METADATA_INVALID', `samlMetadataUrl: ${message}`);
const unreachable = (message: string) => new DomainError('invalid', 'SAML_METADATA_UNREACHABLE', `samlMetadataUrl: ${message}`);

export async function fetchIdpMetadata(url: string, options: MetadataFetchOptions): Promise<IdpMetadata> {
  try {
    await assertSafeTargetUrl(url, options);
  } catch (error) {
    if (error instanceof UnsafeTargetError) throw unreachable(error.message);
    throw error;
  }
  const dispatcher = createSafeDispatcher(options);
  try {
    const response = await request(url, {
      method: 'GET',
      headers: { accept: 'application/samlmetadata+xml, application/xml, text/xml' },
      dispatcher,
      signal: AbortSignal.timeout(FETCH_TIMEOUT_MS),
    });
    const text = await readLimited(response.body);
    if (response.statusCode !== 200) throw unreachable(`the metadata URL answered HTTP ${response.statusCode}`);
    return parseIdpMetadata(text, new Date());
  } catch (error) {
    if (error instanceof DomainError) throw error;
    const reason = error instanceof Error && error.name === 'TimeoutError' ? `no answer within ${FETCH_TIMEOUT_MS} ms` : describeFetchError(error);
    throw unreachable(`could not be fetched (${reason})`);
  } finally {
    await dispatcher.close();
  }
}

async function readLimited(body: AsyncIterable<Buffer>): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > MAX_METADATA_BYTES) throw invalid(`the metadata is larger than ${MAX_METADATA_BYTES} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function describeFetchError(error: unknown): string {
  const cause = error instanceof Error && error.cause instanceof Error ? error.cause : error;
  return cause instanceof Error ? cause.message : String(cause);
}

const elements = (parent: Element, namespace: string, localName: string): Element[] => Array.from(parent.getElementsByTagNameNS(namespace, localName));

/** Reads one IdP's EntityDescriptor (alone, or the only one in an EntitiesDescriptor). */
export function parseIdpMetadata(xml: string, now: Date): IdpMetadata {
  if (/<!DOCTYPE/i.test(xml)) throw invalid('the metadata carries a DTD, which is not allowed');
  let root: Element | null;
  try {
    root = new DOMParser({ onError: onErrorStopParsing }).parseFromString(xml, 'text/xml').documentElement;
  } catch {
    throw invalid('the metadata is not well-formed XML');
  }
  const entities = root ? (root.localName === 'EntityDescriptor' && root.namespaceURI === MD ? [root] : elements(root, MD, 'EntityDescriptor')) : [];
  const idpEntities = entities.filter((entity) => elements(entity, MD, 'IDPSSODescriptor').length > 0);
  const [entity] = idpEntities;
  if (!entity || idpEntities.length > 1) throw invalid(`expected the metadata of exactly one IdP, found ${idpEntities.length}`);
  const issuer = entity.getAttribute('entityID')?.trim();
  if (!issuer) throw invalid('the EntityDescriptor has no entityID');

  const descriptor = elements(entity, MD, 'IDPSSODescriptor')[0]!;
  const entryPoint = elements(descriptor, MD, 'SingleSignOnService').find((service) => service.getAttribute('Binding') === REDIRECT_BINDING)?.getAttribute('Location');
  if (!entryPoint) throw invalid('the IdP offers no SingleSignOnService with the HTTP-Redirect binding');
  if (!entryPoint.startsWith('https://')) throw invalid(`the IdP's SingleSignOnService ${entryPoint} is not https`);

  const logoutUrl = elements(descriptor, MD, 'SingleLogoutService').find((service) => service.getAttribute('Binding') === REDIRECT_BINDING)?.getAttribute('Location') ?? null;

  const signingKeys = elements(descriptor, MD, 'KeyDescriptor').filter((key) => (key.getAttribute('use') ?? 'signing') === 'signing');
  const certificates: string[] = [];
  for (const value of signingKeys.flatMap((key) => elements(key, DSIG, 'X509Certificate'))) {
    // Expired certificates are skipped: during a rollover metadata lists the outgoing one for a while.
    const parsed = parseCertificates(value.textContent ?? '', now);
    if ('pems' in parsed) certificates.push(...parsed.pems.filter((pem) => !certificates.includes(pem)));
  }
  if (certificates.length === 0) throw invalid('the metadata carries no valid (parseable, unexpired) signing certificate');
  return { issuer, entryPoint, logoutUrl: logoutUrl?.startsWith('https://') ? logoutUrl : null, certificates };
}
