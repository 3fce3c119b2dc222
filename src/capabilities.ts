// Every capability of the service, in the order their routes are registered.
import { apiKeysCapability } from './api-keys/capability.ts';
import { auditCapability } from './audit/capability.ts';
import { auditStreamsCapability } from './audit-streams/capability.ts';
import type { Capability } from './capability.ts';
import { exportsCapability } from './exports/capability.ts';
import { consoleCapability } from './console/plugin.ts';
import { emailDomainsCapability } from './email-domains/capability.ts';
import { identityCapability } from './identity/capability.ts';
import { operationsCapability } from './operations/capability.ts';
import { patientsCapability } from './patients/capability.ts';
import { scimCapability } from './scim/capability.ts';
import { smartClientsCapability } from './smart-clients/capability.ts';
import { ssoCapability } from './sso/capability.ts';
import { tenantsCapability } from './tenants/capability.ts';
import { webhooksCapability } from './webhooks/capability.ts';
import { workflowsCapability } from './workflows/capability.ts';

export const capabilities: Capability[] = [tenantsCapability, identityCapability, apiKeysCapability, emailDomainsCapability, ssoCapability, scimCapability, webhooksCapability, patientsCapability, smartClientsCapability, auditCapability, auditStreamsCapability, operationsCapability, workflowsCapability, exportsCapability, consoleCapability];

/** The tags of /api/openapi and what each groups: every tag an operation uses is described here (test/http/openapi.test.ts). */
export const API_TAGS: Readonly<Record<string, string>> = {
  Identity: 'Signing in to the console (sign-in links, SAML), the current session and signing out.',
  'API keys': 'Creating, listing and revoking the employer\'s API keys (x-api-key), and their usage.',
  'E-mail domains': 'Claiming and verifying the employer\'s e-mail domains (DNS TXT): patients\' e-mails in a verified domain belong to this employer only.',
  SSO: 'SAML single sign-on and the SCIM token: the employer\'s configuration, trust changes that need confirming, and the SAML endpoints the identity provider calls.',
  SCIM: 'SCIM 2.0 (RFC 7643/7644) provisioning of users and groups by the employer\'s identity provider, with the employer\'s SCIM bearer token.',
  Webhooks: 'Webhook subscriptions, their signing secrets and delivery log; the `webhooks` section lists the events delivered.',
  Patients: 'Cohort uploads and the patient roster; erasing a patient\'s personal data.',
  FHIR: 'FHIR R4 REST API over the employer\'s patients and their clinical resources (application/fhir+json, errors as OperationOutcome).',
  Users: 'The employer\'s users: erasing a deactivated user\'s personal data.',
  'Administrators from the IdP': 'Which identity-provider groups (SCIM groups, SAML attribute values) make their members the employer\'s administrators.',
  'SMART clients': 'SMART Backend Services: the employer\'s registered client applications (their public key sets and scopes) and the OAuth token endpoint that gives them FHIR access tokens.',
  'FHIR Bulk Data': 'FHIR Bulk Data $export (asynchronous request pattern) and its NDJSON files.',
  Exports: 'CSV exports of the roster and their downloads.',
  Audit: 'The employer\'s audit log, its streams to an HTTPS destination (NDJSON, Splunk HEC, Datadog logs), and the public key that verifies the audit chain\'s signed checkpoints.',
  Operations: 'Scheduled jobs a scheduler may trigger with the cron secret.',
  Authorizations: 'Prior authorizations the platform requests and the employer reviews.',
  Tapering: 'Medication tapering proposals and their outcomes.',
  Simulations: 'Cost simulations of the employer\'s patients or a cohort.',
  Invoices: 'The employer\'s invoices.',
  'Platform (internal)': 'The internal platform API for the platform\'s own services, with a platform service token.',
};
