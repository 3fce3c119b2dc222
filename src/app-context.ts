// Everything a route, command or task needs from the running service, built once in src/main.ts.
import type { KeyObject } from 'node:crypto';
import type { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import type { FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { ApiKeyPipeline } from './api-keys/pipeline.ts';
import type { AuditSigner } from './audit/signing-key.ts';
import type { Mailer } from './operations/mailer.ts';
import type { Principal, Role, Scope } from './auth/principal.ts';
import type { Config } from './config.ts';
import type { Notifications } from './db/notifications.ts';
import type { Database } from './db/pools.ts';
import type { PersonalDataKeys } from './crypto/personal-data.ts';
import type { CommandDeps } from './event-store/command-handler.ts';
import type { EventStore, Position } from './event-store/port.ts';
import type { SamlRuntime } from './sso/saml-flow.ts';
import type { ScimTokenCache } from './sso/scim-token.ts';
import type { WebhookRuntime } from './webhooks/runtime.ts';
import type { PatientDirectory } from '../projections/patients/queries.ts';

/** Authenticates an `x-api-key` call for a route needing `scope` (built by the api-keys capability). */
export type ApiKeyAuthenticator = (request: FastifyRequest, rawKey: string, scope: Scope | undefined) => Promise<Principal>;

/** The live session behind a cookie secret, or null (built by the identity capability, which owns sessions). */
export type SessionLookup = (sessionSecret: string) => Promise<{ sessionId: string; employerId: string; userId: string; role: Role } | null>;

/** The platform service token with this SHA-256 hash, revoked or not (built by the workflows capability). */
export type PlatformTokenLookup = (tokenHash: string) => Promise<{ id: string; families: readonly string[]; revoked: boolean } | null>;

export type AppContext = {
  config: Config;
  db: Database;
  eventStore: EventStore;
  notifications: Notifications;
  logger: Logger;
  /** `personalData`: for commands that seal personal data under data keys (users, src/tenants/commands.ts). */
  commands: CommandDeps & { personalData: PersonalDataKeys };
  /**
   * Resolves true once the named read models have applied events up to `position`, false after
   * PROJECTION_WAIT_TIMEOUT_MS (the write stands either way; only the read model is late).
   */
  waitForReadModels: (position: Position, names: readonly string[]) => Promise<boolean>;
  openapi: OpenAPIRegistry;
  apiKeyAuthenticator: ApiKeyAuthenticator | null;
  sessionLookup: SessionLookup | null;
  platformTokenLookup: PlatformTokenLookup | null;
  // Per-process services of capabilities, each set once by its capability's setup at start-up (null
  // while that capability is not installed). One per running service: a test process may run several.
  /** The API key pipeline: key cache, rate limiter, usage recorder (src/api-keys/pipeline.ts). */
  apiKeyPipeline: ApiKeyPipeline | null;
  /** Webhook delivery: the address-checking HTTP pool and the worker lease (src/webhooks/runtime.ts). */
  webhookRuntime: WebhookRuntime | null;
  /** SCIM bearer tokens by hash, dropped on every SSO change (src/sso/scim-token.ts). */
  scimTokens: ScimTokenCache | null;
  /** SAML callbacks: the verifier's worker threads, the refusal counts, the per-address limit (src/sso/saml-flow.ts). */
  saml: SamlRuntime | null;
  /** The employer's patients as the platform workflows check and count them (projections/patients/queries.ts). */
  patientDirectory: PatientDirectory | null;
  /** 32-byte key for secrets that must be readable again (webhook signing secrets), from ENCRYPTION_KEY. */
  encryptionKey: KeyObject;
  /** Alert e-mails: SMTP_URL, or .eml files in DATA_DIR/outbox (src/operations/mailer.ts). */
  mailer: Mailer | null;
  /** Ed25519 key of the audit chain's checkpoints, from AUDIT_SIGNING_KEY (src/audit/signing-key.ts). */
  auditSigner: AuditSigner;
  /** Work to finish on shutdown (telemetry flushes and the like), run after the HTTP server closes. */
  shutdownHooks: Array<() => Promise<void>>;
};
