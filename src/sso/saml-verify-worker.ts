// Runs in a worker thread of the SAML verifier's pool (saml-verifier.ts): parses and verifies one
// screened SAML response, so its XML parsing and cryptography never hold up the service's event loop.
// A refusal comes back as data: an Error subclass does not survive the thread boundary.
import { SamlValidationError, verifySamlResponse, type SamlFailureReason, type SamlSpSettings, type VerifiedSamlResponse } from './saml.ts';

export type VerifyTask = { settings: SamlSpSettings; samlResponse: string };
export type VerifyOutcome = { verified: VerifiedSamlResponse } | { refused: { reason: SamlFailureReason; message: string } };

/** Nothing: running it starts a thread, which loads this module (most of a second) before a response waits for it. */
export function warm(): void {}

export default async function verifyInThisThread({ settings, samlResponse }: VerifyTask): Promise<VerifyOutcome> {
  try {
    return { verified: await verifySamlResponse(settings, samlResponse) };
  } catch (error) {
    if (error instanceof SamlValidationError) return { refused: { reason: error.reason, message: error.message } };
    throw error;
  }
}
