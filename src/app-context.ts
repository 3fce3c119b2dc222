// Everything a route, command or task needs from the running service, built once in src/main.ts. Core
// infrastructure only: what a capability creates per process reaches its users as arguments, and what
// core's authentication asks of capabilities arrives through its ports (src/auth/ports.ts).
import type { KeyObject } from 'node:crypto';
import type { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import type { Logger } from 'pino';
import type { AuthPorts } from './auth/ports.ts';
import type { Config } from './config.ts';
import type { AuditSigner } from './crypto/signing-key.ts';
import type { PersonalDataKeys } from './crypto/personal-data.ts';
import type { Notifications } from './db/notifications.ts';
import type { Database } from './db/pools.ts';
import type { CommandDeps } from './event-store/command-handler.ts';
import type { EventStore, Position } from './event-store/port.ts';
import type { Metrics } from './metrics/registry.ts';
import type { Mailer } from './net/mailer.ts';

export type AppContext = {
  config: Config;
  db: Database;
  eventStore: EventStore;
  notifications: Notifications;
  logger: Logger;
  /** This process's Prometheus registry; a capability adds its series here (src/metrics/registry.ts). */
  metrics: Metrics;
  /** `personalData`: for commands that seal personal data under data keys (users, src/tenants/commands.ts). */
  commands: CommandDeps & { personalData: PersonalDataKeys };
  /**
   * Resolves true once the named read models have applied events up to `position`, false after
   * PROJECTION_WAIT_TIMEOUT_MS (the write stands either way; only the read model is late).
   */
  waitForReadModels: (position: Position, names: readonly string[]) => Promise<boolean>;
  openapi: OpenAPIRegistry;
  /** 32-byte key for secrets that must be readable again (webhook signing secrets), from ENCRYPTION_KEY. */
  encryptionKey: KeyObject;
  /** E-mail to people: SMTP_URL, or .eml files in DATA_DIR/outbox (src/net/mailer.ts). */
  mailer: Mailer;
  /** Ed25519 key of the audit chain's checkpoints, from AUDIT_SIGNING_KEY (src/crypto/signing-key.ts). */
  auditSigner: AuditSigner;
  /** The credentials' owners, as core's authentication asks them (wired by src/main.ts once the capabilities started). */
  auth: AuthPorts;
};

/** The context a capability starts in (src/capability.ts): everything but the ports, which capabilities implement. */
export type StartContext = Omit<AppContext, 'auth'>;
