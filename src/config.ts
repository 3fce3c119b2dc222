// Configuration comes only from environment variables, validated once at start-up: a bad value stops
// the process with a message naming the variable instead of failing later in a request.
import { Resolver } from 'node:dns';
import { z } from 'zod';
import { WORKER_CONCURRENCY } from './worker/runner.ts';

const booleanFromText = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'])
  .transform((value) => value === 'true' || value === '1' || value === 'yes');

const configSchema = z
  .object({
    NODE_ENV: z.enum(['development', 'test', 'production']).default('development'),
    PORT: z.coerce.number().int().min(0).max(65535).default(3000),
    HOST: z.string().min(1).default('127.0.0.1'),
    DATABASE_URL: z.string().url().optional(),
    DATA_DIR: z.string().min(1).default('./.data'),
    EMBEDDED_POSTGRES_PORT: z.coerce.number().int().min(1024).max(65535).default(54329),
    PUBLIC_BASE_URL: z.string().url().optional(),
    LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    /** OTLP/HTTP base URL of a collector (spans go to <url>/v1/traces); unset: no tracing (src/tracing.ts). */
    OTEL_EXPORTER_OTLP_ENDPOINT: z.string().url().optional(),
    OTEL_SERVICE_NAME: z.string().min(1).max(200).default('employer-integrations'),
    /** How long finished spans wait, batched, before they are exported. */
    OTEL_BSP_SCHEDULE_DELAY: z.coerce.number().int().positive().default(5000),
    EVENT_STORE: z.enum(['postgres', 'esdb']).default('postgres'),
    EVENTSTORE_CONNECTION_STRING: z.string().min(1).optional(),
    /** 32 bytes as base64 or hex; encrypts webhook signing secrets at rest. */
    ENCRYPTION_KEY: z.string().min(1).optional(),
    /** Comma-separated addresses/CIDRs of trusted reverse proxies, or true/false. */
    TRUST_PROXY: z.string().default('false'),
    SESSION_TTL_HOURS: z.coerce.number().positive().default(12),
    SIGNIN_TOKEN_TTL_MINUTES: z.coerce.number().positive().default(15),
    /** How long a command waits for the projections it needs before answering (read-your-writes). */
    PROJECTION_WAIT_TIMEOUT_MS: z.coerce.number().int().positive().default(5000),
    API_KEY_RATE_LIMIT_PER_MIN: z.coerce.number().int().positive().default(120),
    /** The largest rateLimitPerMinute a key may be given, and the most any key gets (unset: 1200, or API_KEY_RATE_LIMIT_PER_MIN if higher). */
    API_KEY_RATE_LIMIT_MAX_PER_MIN: z.coerce.number().int().positive().optional(),
    /** Calls a minute one signed-in user (or one session) may make, counted per API process. */
    SESSION_RATE_LIMIT_PER_MIN: z.coerce.number().int().positive().default(600),
    SESSION_RATE_LIMIT_BY: z.enum(['user', 'session']).default('user'),
    /** FHIR calls per employer and minute (SPEC 8), counted per process. */
    FHIR_RATE_LIMIT_PER_MIN: z.coerce.number().int().positive().default(120),
    /** Access tokens one SMART client may obtain a minute (token endpoint), counted per process. */
    SMART_TOKEN_RATE_LIMIT_PER_MIN: z.coerce.number().int().positive().default(60),
    /** Failed SMART authentications (assertions, unknown access tokens) one address (IPv6: its /64) may make a minute, counted per process. */
    SMART_AUTH_FAILURES_PER_ADDRESS_PER_MIN: z.coerce.number().int().positive().default(300),
    EXPORT_RETENTION_DAYS: z.coerce.number().positive().default(7),
    /** CSV exports of one employer pending or running at once (FHIR Bulk Data: one at a time). */
    EXPORT_CSV_MAX_IN_FLIGHT: z.coerce.number().int().positive().default(1),
    /** Megabytes of export files one employer may have stored (not yet expired) before new exports are refused. */
    EXPORT_STORAGE_QUOTA_MB: z.coerce.number().positive().default(1024),
    /** Simulations of one employer queued or running at once. */
    SIMULATION_MAX_IN_FLIGHT: z.coerce.number().int().positive().default(3),
    /** Deliveries one employer asked for (queued pings, redeliveries) still pending at once. */
    WEBHOOK_REQUESTED_DELIVERIES_MAX_IN_FLIGHT: z.coerce.number().int().positive().default(20),
    /** Workers each worker process keeps, beside its WORKER_CONCURRENCY, for employers running fewer than WORKER_JOBS_PER_EMPLOYER of its jobs; 0 for none. */
    WORKER_RESERVE_CONCURRENCY: z.coerce.number().int().min(0).max(WORKER_CONCURRENCY).default(4),
    /** An employer's share of a worker process: with this many of its jobs running, the reserve workers leave its jobs alone. */
    WORKER_JOBS_PER_EMPLOYER: z.coerce.number().int().positive().default(4),
    WEBHOOK_RETRY_BASE_MS: z.coerce.number().int().positive().default(5000),
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: booleanFromText.default(false),
    /** How long a webhook target's host name may take to resolve; past it the attempt fails. */
    WEBHOOK_DNS_TIMEOUT_MS: z.coerce.number().int().positive().default(2_000),
    /** The whole request (headers and body) must arrive within this; else 408 and the connection closes. */
    /** DNS servers (`address` or `address:port`, comma-separated) that e-mail domain verification asks; empty: the system's. */
    EMAIL_DOMAIN_DNS_SERVERS: z
      .string()
      .default('')
      .transform((text) => text.split(',').map((server) => server.trim()).filter(Boolean))
      .refine((servers) => {
        try {
          new Resolver().setServers(servers);
          return true;
        } catch {
          return false;
        }
      }, 'must be IP addresses, each optionally with a port (1.1.1.1, 127.0.0.1:5353, [::1]:53), comma-separated'),
    /** The whole TXT look-up of a domain verification, whichever servers it tries. */
    EMAIL_DOMAIN_DNS_TIMEOUT_MS: z.coerce.number().int().positive().max(60_000).default(5_000),
    HTTP_REQUEST_TIMEOUT_MS: z.coerce.number().int().positive().default(60_000),
    /** The request headers must arrive within this (slow-header clients hold no connection longer). */
    HTTP_HEADERS_TIMEOUT_MS: z.coerce.number().int().positive().default(10_000),
    SAML_CLOCK_SKEW_MS: z.coerce.number().int().min(0).default(120_000),
    /** Worker threads that parse and verify SAML responses off the event loop (src/sso/saml-verifier.ts). */
    SAML_VERIFY_THREADS: z.coerce.number().int().min(1).max(16).default(1),
    /** Origins (besides our own) that a SAML `returnTo` may point at. Comma-separated. */
    RETURN_TO_ALLOWED_ORIGINS: z.string().default(''),
    /** Every connection one process opens, split across its pools by role (src/db/pools.ts). */
    DATABASE_MAX_CONNECTIONS: z.coerce.number().int().min(5).default(20),
    /** How long a query waits for a free connection before the request gets 503 DATABASE_UNAVAILABLE. */
    DATABASE_CONNECTION_WAIT_MS: z.coerce.number().int().positive().default(3000),
    /** statement_timeout of every pooled connection; 0 for none. Migrations and rebuilds run without one. */
    DATABASE_STATEMENT_TIMEOUT_MS: z.coerce.number().int().min(0).default(30_000),
    /** Ed25519 private key (PKCS#8 PEM, or DER in base64) signing audit chain checkpoints. */
    AUDIT_SIGNING_KEY: z.string().min(1).optional(),
    /** A checkpoint is signed after this many sealed events of an employer (and every 10 minutes). */
    AUDIT_CHECKPOINT_EVERY_EVENTS: z.coerce.number().int().positive().default(1000),
    /** Audit stream batches: at most this many entries (Datadog takes 1,000 at most) and bytes (its 5 MB) a request. */
    AUDIT_STREAM_BATCH_MAX_ENTRIES: z.coerce.number().int().positive().max(1000).default(500),
    AUDIT_STREAM_BATCH_MAX_BYTES: z.coerce.number().int().min(1024).max(5_000_000).default(1_000_000),
    /** A failed audit stream batch is retried after this, doubled after each failure up to 15 minutes. */
    AUDIT_STREAM_RETRY_BASE_MS: z.coerce.number().int().positive().default(5000),
    /** Bearer secret of GET /api/cron/*; unset: those endpoints answer 503 (the in-process crontab still runs). */
    CRON_SECRET: z.string().min(16).optional(),
    /** Bearer secret a Prometheus scrape of GET /metrics must present; set alone, the API server serves /metrics. */
    METRICS_SECRET: z.string().min(16).optional(),
    /** Port of a listener of its own serving GET /metrics in every process role (on HOST); the API port then serves none. */
    METRICS_PORT: z.coerce.number().int().min(1).max(65535).optional(),
    /** smtp(s)://user:pass@host:port for alert e-mails; unset: .eml files in DATA_DIR/outbox. */
    SMTP_URL: z.string().url().optional(),
    MAIL_FROM: z.string().min(3).default('employer-integrations <no-reply@localhost>'),
    /** API_KEY_IP_NOT_ALLOWED rejections of an employer within an hour that raise an alert. */
    INTEGRATION_ALERT_IP_REJECTIONS_THRESHOLD: z.coerce.number().int().positive().default(10),
    API_KEY_INVENTORY_EXPECTED_MIN: z.coerce.number().int().min(0).default(0),
    API_KEY_INVENTORY_EXPECTED_MAX: z.coerce.number().int().min(0).default(50),
    API_KEY_STALE_DAYS: z.coerce.number().int().positive().default(90),
    API_KEY_EXPIRING_DAYS: z.coerce.number().int().positive().default(14),
    /** Days webhook deliveries, their attempts and recoveries are kept (the daily retention job, src/operations/retention.ts). */
    RETENTION_WEBHOOK_LOG_DAYS: z.coerce.number().int().positive().default(30),
    /** Days sessions and sign-in tokens are kept after they expire or end. */
    RETENTION_SESSIONS_DAYS: z.coerce.number().int().positive().default(7),
    /** Days the SCIM request log is kept. */
    RETENTION_SCIM_REQUESTS_DAYS: z.coerce.number().int().positive().default(30),
  })
  .superRefine((env, ctx) => {
    if (env.EVENT_STORE === 'esdb' && !env.EVENTSTORE_CONNECTION_STRING) {
      ctx.addIssue({ code: 'custom', path: ['EVENTSTORE_CONNECTION_STRING'], message: 'is required when EVENT_STORE=esdb' });
    }
    if (env.HTTP_HEADERS_TIMEOUT_MS > env.HTTP_REQUEST_TIMEOUT_MS) {
      ctx.addIssue({ code: 'custom', path: ['HTTP_HEADERS_TIMEOUT_MS'], message: 'must not exceed HTTP_REQUEST_TIMEOUT_MS' });
    }
    if (env.NODE_ENV === 'production' && env.DATABASE_URL && !env.ENCRYPTION_KEY) {
      ctx.addIssue({ code: 'custom', path: ['ENCRYPTION_KEY'], message: 'is required when DATABASE_URL is set and NODE_ENV=production' });
    }
    if (env.API_KEY_RATE_LIMIT_MAX_PER_MIN !== undefined && env.API_KEY_RATE_LIMIT_MAX_PER_MIN < env.API_KEY_RATE_LIMIT_PER_MIN) {
      ctx.addIssue({ code: 'custom', path: ['API_KEY_RATE_LIMIT_MAX_PER_MIN'], message: 'is below API_KEY_RATE_LIMIT_PER_MIN' });
    }
    if (env.METRICS_PORT !== undefined && env.METRICS_PORT === env.PORT) {
      ctx.addIssue({ code: 'custom', path: ['METRICS_PORT'], message: 'must differ from PORT' });
    }
    if (env.API_KEY_INVENTORY_EXPECTED_MIN > env.API_KEY_INVENTORY_EXPECTED_MAX) {
      ctx.addIssue({ code: 'custom', path: ['API_KEY_INVENTORY_EXPECTED_MIN'], message: 'is above API_KEY_INVENTORY_EXPECTED_MAX' });
    }
  });

/** API_KEY_RATE_LIMIT_MAX_PER_MIN when unset. */
const DEFAULT_API_KEY_RATE_LIMIT_MAX_PER_MIN = 1200;

export type Config = z.infer<typeof configSchema> & { PUBLIC_BASE_URL: string; API_KEY_RATE_LIMIT_MAX_PER_MIN: number };

export class ConfigError extends Error {}

export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  // Empty strings mean "unset", as in most shells' `VAR= command`.
  const present = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== undefined && value !== ''));
  const parsed = configSchema.safeParse(present);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((issue) => `  ${issue.path.join('.') || '(environment)'}: ${issue.message}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  const config = parsed.data;
  const publicBaseUrl = (config.PUBLIC_BASE_URL ?? `http://localhost:${config.PORT}`).replace(/\/+$/, '');
  const rateLimitCeiling = config.API_KEY_RATE_LIMIT_MAX_PER_MIN ?? Math.max(DEFAULT_API_KEY_RATE_LIMIT_MAX_PER_MIN, config.API_KEY_RATE_LIMIT_PER_MIN);
  return { ...config, PUBLIC_BASE_URL: publicBaseUrl, API_KEY_RATE_LIMIT_MAX_PER_MIN: rateLimitCeiling };
}
