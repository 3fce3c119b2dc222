// Every capability of the service, in the order their routes are registered.
import { apiKeysCapability } from './api-keys/capability.ts';
import type { Capability } from './capability.ts';
import { exportsCapability } from './exports/capability.ts';
import { identityCapability } from './identity/capability.ts';
import { patientsCapability } from './patients/capability.ts';
import { scimCapability } from './scim/capability.ts';
import { ssoCapability } from './sso/capability.ts';
import { tenantsCapability } from './tenants/capability.ts';
import { webhooksCapability } from './webhooks/capability.ts';

export const capabilities: Capability[] = [tenantsCapability, identityCapability, apiKeysCapability, ssoCapability, scimCapability, webhooksCapability, patientsCapability, exportsCapability];
