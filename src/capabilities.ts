// Every capability of the service, in the order their routes are registered.
import { apiKeysCapability } from './api-keys/capability.ts';
import { auditCapability } from './audit/capability.ts';
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

export const capabilities: Capability[] = [tenantsCapability, identityCapability, apiKeysCapability, emailDomainsCapability, ssoCapability, scimCapability, webhooksCapability, patientsCapability, smartClientsCapability, auditCapability, operationsCapability, workflowsCapability, exportsCapability, consoleCapability];
