// The command line: `npm run cli -- <command>` (or the package's bin). `serve` runs the service; the
// others are operator and auditor tools that run against the same database.
import { userInfo } from 'node:os';
import { parseArgs } from 'node:util';
import cliProgress from 'cli-progress';
import pino from 'pino';
import { z } from 'zod';
import { listParked } from '../projections/parking.ts';
import { retryParkedEvents } from '../projections/runner.ts';
import { RebuildAlreadyRunningError, rebuildProjection } from '../projections/rebuild.ts';
import { projectionStatuses } from '../projections/status.ts';
import { pauseProjection, resumeProjection } from '../projections/operations.ts';
import { skipParkedEvent } from './operations/commands.ts';
import { ConfigError, loadConfig } from './config.ts';
import { EMAIL_MAX, NAME_MAX } from './http/limits.ts';
import { issueSignInToken } from './identity/commands.ts';
import { ALL_ROLES, startService, type Role, type Service } from './main.ts';
import { describePlan } from './db/pools.ts';
import { formatPosition, parsePosition, START, type RecordedEvent } from './event-store/port.ts';
import { createEmployer, eraseUser } from './tenants/commands.ts';
import { verifyDomainByOperator } from './email-domains/commands.ts';
import { normalizeDomain } from './email-domains/domain-name.ts';
import { erasePatient } from './patients/commands.ts';
import { ERASED_FIELDS, eventsOfErasedPatients } from './patients/replay.ts';
import { eventsOfErasedUsers, USER_ERASED_FIELDS } from './tenants/replay.ts';
import { findUserByEmail } from '../projections/tenants/queries.ts';
import { describeFailure, describeSuccess } from '../scripts/verify-audit-chain.mjs';
import { auditRecords, waitForSealing } from './audit/replay.ts';
import { verifyTenantChain } from './audit/verify.ts';
import { createPlatformToken, revokePlatformToken } from './workflows/commands.ts';
import { DomainError } from './event-store/decider.ts';
import { PLATFORM_FAMILIES } from './workflows/events.ts';

const USAGE = `Usage: npm run cli -- <command>

  serve [--role all|api|worker|projections]   run the service (roles may be comma-separated)
  migrate                                    apply database migrations
  tenants create --name <name> --admin-email <email> [--admin-first-name <name> --admin-last-name <name>] [--json]
                                             the administrator's name (SCIM shows one derived from the e-mail without it)
  signin-link --email <email> [--json]        a one-time sign-in URL for an existing user
  projections status [--json]                 each projection's position, lag and parked events
  projections retry <name>                    apply that projection's parked events again (after a fix)
  projections skip <name> <commit/prepare> --reason <text> [--by <operator>]
                                             leave the parked event at that position unapplied (recorded and audited
                                             with who and why) and apply the events of its stream held behind it
  projections pause <name> [--reason <text>] [--by <operator>]   every runner stops applying it until resumed
  projections resume <name>                  apply it again from its checkpoint
  projections rebuild [<name>] [--restart]    rebuild one projection (or all) from the first event; resumes a
                                             stopped rebuild unless --restart
  patients erase --tenant <employerId> --patient <patientId>   erase a patient's personal data (crypto-shredding)
  users erase --tenant <employerId> --user <userId>   erase a deactivated user's personal data (crypto-shredding)
  events replay --tenant <employerId> [--from <commit/prepare>] [--format ndjson|table]
                                             ndjson carries each event's seal (seq, prevHash, hash) and the signed checkpoints
  events verify --tenant <employerId>        recompute the tenant's audit hash chain and checkpoint signatures (exit 1 if broken)
  platform-tokens create --name <name> --families <f1,f2,...> [--json]
                                             a platform service token (families: ${PLATFORM_FAMILIES.join(', ')}), printed once
  platform-tokens revoke <id>                 revoke a platform service token
  domains verify --tenant <employerId> --domain <domain>
                                             verify the employer's claim on an e-mail domain without DNS (claims it
                                             first if needed): its new addresses are then that employer's alone`;

const SYSTEM_ACTOR = { type: 'system', id: 'cli' } as const;

async function main(argv: string[]) {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      role: { type: 'string', default: 'all' },
      name: { type: 'string' },
      'admin-email': { type: 'string' },
      'admin-first-name': { type: 'string' },
      'admin-last-name': { type: 'string' },
      email: { type: 'string' },
      json: { type: 'boolean', default: false },
      tenant: { type: 'string' },
      from: { type: 'string' },
      patient: { type: 'string' },
      user: { type: 'string' },
      format: { type: 'string', default: 'ndjson' },
      restart: { type: 'boolean', default: false },
      families: { type: 'string' },
      domain: { type: 'string' },
      reason: { type: 'string' },
      by: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  const [command, subcommand, argument] = positionals;
  if (values.help || !command) return void console.log(USAGE);
  const config = loadConfig();

  if (command === 'serve') return serve(config, parseRoles(values.role!));
  if (command === 'migrate') {
    const { connectDatabase } = await import('./main.ts');
    const { embedded } = await connectDatabase(config);
    await embedded?.stop();
    return void console.log('Migrations applied.');
  }

  // Operator commands run the projections in-process while they work, so what they write is readable
  // at once even when no server is running; with a server running, both runners share the work safely.
  // A rebuild runs no projection runner: a second runner competing with the service's for every batch
  // would only slow the live projections down. Its statements (an index build over a large table) may
  // rightly run for minutes.
  const rebuilding = command === 'projections' && subcommand === 'rebuild';
  const statementTimeout = rebuilding ? { DATABASE_STATEMENT_TIMEOUT_MS: 0 } : {};
  // An operator command is no scrape target: METRICS_PORT belongs to the `serve` process beside it.
  const notServingMetrics = { METRICS_PORT: undefined, METRICS_SECRET: undefined };
  const service = await startService({ config: { ...config, LOG_LEVEL: 'warn', ...statementTimeout, ...notServingMetrics }, roles: rebuilding ? [] : ['projections'] });
  try {
    if (command === 'tenants' && subcommand === 'create') return await createTenant(service, { name: values.name, adminEmail: values['admin-email'], adminGivenName: values['admin-first-name'], adminFamilyName: values['admin-last-name'] }, values.json!);
    if (command === 'signin-link') return await signInLink(service, values.email, values.json!);
    if (command === 'projections' && subcommand === 'status') return await projectionsStatus(service, values.json!);
    if (command === 'projections' && subcommand === 'retry') return await projectionsRetry(service, argument);
    if (command === 'projections' && subcommand === 'skip') return await projectionsSkip(service, argument, positionals[3], { by: values.by, reason: values.reason });
    if (command === 'projections' && (subcommand === 'pause' || subcommand === 'resume')) return await projectionsPause(service, subcommand, argument, { by: values.by, reason: values.reason });
    if (command === 'projections' && subcommand === 'rebuild') return await projectionsRebuild(service, argument, values.restart!);
    if (command === 'patients' && subcommand === 'erase') return await erase(service, values.tenant, values.patient);
    if (command === 'users' && subcommand === 'erase') return await eraseUserData(service, values.tenant, values.user);
    if (command === 'events' && subcommand === 'replay') return await replay(service, values.tenant, values.from, values.format!);
    if (command === 'events' && subcommand === 'verify') return await verifyEvents(service, values.tenant);
    if (command === 'platform-tokens' && subcommand === 'create') return await platformTokensCreate(service, values.name, values.families, values.json!);
    if (command === 'platform-tokens' && subcommand === 'revoke') return await platformTokensRevoke(service, argument);
    if (command === 'domains' && subcommand === 'verify') return await verifyDomain(service, values.tenant, values.domain);
    throw new UsageError(`Unknown command: ${positionals.join(' ')}`);
  } finally {
    await service.stop();
  }
}

class UsageError extends Error {}

function parseRoles(text: string): Role[] {
  if (text === 'all') return ALL_ROLES;
  const roles = text.split(',').map((role) => role.trim());
  for (const role of roles) if (!ALL_ROLES.includes(role as Role)) throw new UsageError(`--role takes all, api, worker or projections; got ${role}`);
  return roles as Role[];
}

const LOG_BATCH_BYTES = 4096;
const LOG_FLUSH_INTERVAL_MS = 1000;

async function serve(config: ReturnType<typeof loadConfig>, roles: Role[]) {
  // Log lines leave in batches of LOG_BATCH_BYTES, or after LOG_FLUSH_INTERVAL_MS, instead of one
  // write each (a synchronous write per request line was 7 % of a read's busy time, `npm run bench --
  // read --profile`); pino flushes what is left when the process exits.
  const logDestination = pino.destination({ dest: 1, sync: false, minLength: LOG_BATCH_BYTES });
  setInterval(() => logDestination.flush(), LOG_FLUSH_INTERVAL_MS).unref();
  const service = await startService({ config, roles, logDestination });
  const where = service.url ? ` on ${config.PUBLIC_BASE_URL} (listening at ${service.url})` : '';
  console.log(`employer-integrations running [${roles.join(', ')}]${where}; database: ${config.DATABASE_URL ? 'DATABASE_URL' : `embedded Postgres in ${config.DATA_DIR}`}; ${describePlan(service.ctx.db.plan)}.`);
  if (service.url) console.log('Create a first tenant with: npm run cli -- tenants create --name Acme --admin-email admin@acme.test');
  let signals = 0;
  const shutdown = (signal: string) => {
    if (++signals > 1) process.exit(130);
    console.log(`${signal}: finishing in-flight requests and jobs, then stopping.`);
    void service.stop().then(() => process.exit(0), (error) => {
      console.error(error);
      process.exit(1);
    });
  };
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('SIGTERM', () => shutdown('SIGTERM'));
}

const tenantInput = z.object({
  name: z.string().trim().min(1).max(NAME_MAX),
  adminEmail: z.string().trim().max(EMAIL_MAX).email(),
  adminGivenName: z.string().trim().min(1).max(NAME_MAX).optional(),
  adminFamilyName: z.string().trim().min(1).max(NAME_MAX).optional(),
});

async function createTenant(service: Service, options: Partial<Record<keyof z.infer<typeof tenantInput>, string>>, json: boolean) {
  const input = tenantInput.safeParse(options);
  if (!input.success) {
    throw new UsageError('tenants create needs --name <name> and --admin-email <email> (a valid address); --admin-first-name and --admin-last-name, if given, are not empty.');
  }
  const { employerId, adminUserId } = await createEmployer(service.ctx, { tenantId: null, actor: SYSTEM_ACTOR }, input.data);
  const link = await issueSignInToken(service.ctx, { tenantId: employerId, actor: SYSTEM_ACTOR }, { userId: adminUserId, via: 'cli' });
  if (json) return void console.log(JSON.stringify({ employerId, adminUserId, signInUrl: link.signInUrl, signInUrlExpiresAt: link.expiresAt }));
  console.log(`Employer ${input.data.name} created: ${employerId}\nAdmin ${input.data.adminEmail} (${adminUserId}) signs in once at:\n  ${link.signInUrl}\n(valid until ${link.expiresAt})`);
}

async function signInLink(service: Service, email: string | undefined, json: boolean) {
  if (!email) throw new UsageError('signin-link needs --email <email>.');
  const user = await findUserByEmail(service.ctx.db.slonik, email);
  if (!user) throw new UsageError(`No user has the e-mail ${email}.`);
  if (!user.active) throw new UsageError(`The user ${email} is deactivated.`);
  const link = await issueSignInToken(service.ctx, { tenantId: user.employer_id, actor: SYSTEM_ACTOR }, { userId: user.id, via: 'cli' });
  if (json) return void console.log(JSON.stringify({ employerId: user.employer_id, userId: user.id, signInUrl: link.signInUrl, expiresAt: link.expiresAt }));
  console.log(`${link.signInUrl}\n(valid until ${link.expiresAt})`);
}

async function platformTokensCreate(service: Service, name: string | undefined, families: string | undefined, json: boolean) {
  const input = z
    .object({ name: z.string().trim().min(1).max(100), families: z.array(z.enum(PLATFORM_FAMILIES)).min(1) })
    .safeParse({ name, families: families?.split(',').map((family) => family.trim()).filter(Boolean) });
  if (!input.success) throw new UsageError(`platform-tokens create needs --name <name> and --families <list> (of ${PLATFORM_FAMILIES.join(', ')}).`);
  const { id, token } = await createPlatformToken(service.ctx, { tenantId: null, actor: SYSTEM_ACTOR }, input.data);
  if (json) return void console.log(JSON.stringify({ id, token }));
  console.log(`Platform token ${id} (${input.data.name}; ${input.data.families.join(', ')}). Shown once, store it now:\n  ${token}\nSend it as Authorization: Bearer <token> to /api/platform/v1/.`);
}

async function platformTokensRevoke(service: Service, tokenId: string | undefined) {
  if (!tokenId) throw new UsageError('platform-tokens revoke needs the token id.');
  await revokePlatformToken(service.ctx, { tenantId: null, actor: SYSTEM_ACTOR }, { tokenId });
  console.log(`Platform token ${tokenId} revoked.`);
}

async function verifyDomain(service: Service, tenantId: string | undefined, domainText: string | undefined) {
  const domain = domainText === undefined ? null : normalizeDomain(domainText);
  if (!tenantId || !/^emp_[0-9a-f]{32}$/.test(tenantId) || !domain) throw new UsageError('domains verify needs --tenant <employerId> and --domain <domain name>.');
  await verifyDomainByOperator(service.ctx, { tenantId, actor: SYSTEM_ACTOR }, { domain });
  console.log(`${domain} is verified for employer ${tenantId}: new addresses in it can be taken up by that employer only.`);
}

/** Status counts pending events up to this (a count costs what scanning, or on KurrentDB reading, them costs). */
const STATUS_COUNT_LIMIT = 1_000_000;
/** Parked events listed under the status table; the rest are counted. */
const STATUS_PARKED_SHOWN = 50;

async function projectionsStatus(service: Service, json: boolean) {
  const { slonik: pool } = service.ctx.db;
  const [head, projections, parked] = await Promise.all([
    service.ctx.eventStore.headPosition(),
    projectionStatuses({ pool, eventStore: service.ctx.eventStore, projections: service.projections, countLimit: STATUS_COUNT_LIMIT }),
    listParked(pool, { limit: STATUS_PARKED_SHOWN }),
  ]);
  if (json) return void console.log(JSON.stringify({ head: formatPosition(head), projections, parked }));
  console.log(`Newest event: ${formatPosition(head)}`);
  console.table(
    projections.map(({ projection, position, pendingEvents, parkedEvents, rebuildable, paused }) => ({
      projection,
      position: position ?? '-',
      pendingEvents: pendingEvents === null ? '?' : pendingEvents >= STATUS_COUNT_LIMIT ? `${STATUS_COUNT_LIMIT}+` : pendingEvents,
      parkedEvents,
      rebuildable: rebuildable ?? '?',
      paused: paused ? `by ${paused.by} ${paused.at}${paused.reason ? `: ${paused.reason}` : ''}` : '',
    })),
  );
  if (parked.length === 0) return;
  console.log('Parked events (apply them again with: npm run cli -- projections retry <projection>):');
  console.table(parked.map((row) => ({ projection: row.projection, eventId: row.event_id, tenant: row.tenant_id, type: row.event_type, attempts: row.attempts, parkedAt: row.parked_at, error: row.error.slice(0, 120) })));
}

async function projectionsRetry(service: Service, name: string | undefined) {
  const projection = service.projections.find((candidate) => candidate.name === name);
  if (!projection) throw new UsageError(`projections retry needs the name of a projection${name ? `; there is none named ${name}` : ''}. See: npm run cli -- projections status`);
  const { applied, stillParked } = await retryParkedEvents({ pool: service.ctx.db.slonik, eventStore: service.ctx.eventStore, projection });
  console.log(`${projection.name}: ${applied} parked event(s) applied, ${stillParked} still parked.`);
  if (stillParked === 0) return;
  for (const row of await listParked(service.ctx.db.slonik, { projection: projection.name, limit: STATUS_PARKED_SHOWN })) {
    console.log(`  ${row.event_id} ${row.event_type} tenant ${row.tenant_id ?? '-'} (${row.attempts} attempts): ${row.error}`);
  }
  // Scripts can tell that something is still parked.
  process.exitCode = 1;
}

function projectionNamed(service: Service, name: string | undefined, command: string) {
  const projection = service.projections.find((candidate) => candidate.name === name);
  if (!projection) throw new UsageError(`projections ${command} needs the name of a projection${name ? `; there is none named ${name}` : ''}. See: npm run cli -- projections status`);
  return projection;
}

/** The operator: --by, else the OS user running the CLI. */
const operatorOf = (by: string | undefined) => (by?.trim() || userInfo().username).slice(0, 100);

async function projectionsSkip(service: Service, name: string | undefined, positionText: string | undefined, options: { by: string | undefined; reason: string | undefined }) {
  const projection = projectionNamed(service, name, 'skip');
  let position;
  try {
    position = parsePosition(positionText ?? '');
  } catch {
    throw new UsageError('projections skip needs the parked event\'s position (commit/prepare, as projections status shows it).');
  }
  const reason = options.reason?.trim();
  if (!reason) throw new UsageError('projections skip needs --reason <why the event is left unapplied>.');
  const { skipped, released } = await skipParkedEvent(service.ctx, { projection, position, skippedBy: operatorOf(options.by), reason: reason.slice(0, 1000) });
  console.log(`${projection.name}: skipped ${skipped.event_type} ${skipped.event_id} of ${skipped.stream_name}; ${released.applied} event(s) of that stream applied, ${released.stillParked} still parked.`);
  if (released.stillParked > 0) process.exitCode = 1;
}

async function projectionsPause(service: Service, action: 'pause' | 'resume', name: string | undefined, options: { by: string | undefined; reason: string | undefined }) {
  const projection = projectionNamed(service, name, action);
  const pool = service.ctx.db.slonik;
  if (action === 'pause') {
    const paused = await pauseProjection(pool, projection.name, { by: operatorOf(options.by), reason: options.reason?.trim().slice(0, 1000) || null });
    return void console.log(paused ? `${projection.name} paused: no runner applies it until: npm run cli -- projections resume ${projection.name}` : `${projection.name} was paused already.`);
  }
  const resumed = await resumeProjection(pool, projection.name);
  console.log(resumed ? `${projection.name} resumed from its checkpoint.` : `${projection.name} was not paused.`);
}

async function projectionsRebuild(service: Service, name: string | undefined, restart: boolean) {
  const targets = service.projections.filter((projection) => (name ? projection.name === name : projection.rebuildable !== false));
  if (targets.length === 0) throw new UsageError(`No rebuildable projection named ${name}. See: npm run cli -- projections status`);
  const total = await service.ctx.eventStore.countEventsAfter(START);
  for (const projection of targets) {
    const progress = createProgress(`rebuild ${projection.name}`, total);
    let read = 0;
    const started = performance.now();
    const result = await rebuildProjection({
      db: service.ctx.db,
      eventStore: service.ctx.eventStore,
      projection,
      restart,
      onProgress: (done) => progress.update((read = Math.min(total, done.read))),
    }).catch((error) => {
      progress.stop();
      // Another operator's rebuild of the same projection: say so, and change nothing.
      throw error instanceof RebuildAlreadyRunningError ? new UsageError(error.message) : error;
    });
    progress.stop();
    const seconds = (performance.now() - started) / 1000;
    const resumed = result.resumedFrom ? ` (resumed from ${formatPosition(result.resumedFrom)})` : '';
    console.log(
      `${projection.name}: rebuilt from ${read} events (${result.eventsApplied} applied, ${result.parked} parked) in ${seconds.toFixed(1)} s${resumed}, now at ${formatPosition(result.position)}.`,
    );
  }
}

async function erase(service: Service, tenantId: string | undefined, patientId: string | undefined) {
  if (!tenantId || !patientId) throw new UsageError('patients erase needs --tenant <employerId> and --patient <patientId>.');
  const { erasedAt } = await erasePatient(service.ctx, { tenantId, actor: SYSTEM_ACTOR }, { patientId });
  console.log(`Erased the personal data of patient ${patientId} (${erasedAt}).`);
}

async function eraseUserData(service: Service, tenantId: string | undefined, userId: string | undefined) {
  if (!tenantId || !userId) throw new UsageError('users erase needs --tenant <employerId> and --user <userId>.');
  const { erasedAt } = await eraseUser(service.ctx, { tenantId, actor: SYSTEM_ACTOR }, { userId });
  console.log(`Erased the personal data of user ${userId} (${erasedAt}).`);
}

async function replay(service: Service, tenantId: string | undefined, from: string | undefined, format: string) {
  if (!tenantId) throw new UsageError('events replay needs --tenant <employerId>.');
  if (format !== 'ndjson' && format !== 'table') throw new UsageError('--format takes ndjson or table.');
  let after = from ? parsePosition(from) : START;
  const write = (text: string) => new Promise<void>((resolve) => (process.stdout.write(text) ? resolve() : process.stdout.once('drain', resolve)));
  if (format === 'ndjson') {
    await waitForSealing(service.ctx);
    let out = '';
    const markErased = async (events: readonly RecordedEvent[]) => new Map<string, readonly string[]>([
      ...[...(await eventsOfErasedPatients(service.ctx.db.slonik, tenantId, events))].map((eventId) => [eventId, ERASED_FIELDS] as const),
      ...[...(await eventsOfErasedUsers(service.ctx.db.slonik, tenantId, events))].map((eventId) => [eventId, USER_ERASED_FIELDS] as const),
    ]);
    for await (const record of auditRecords(service.ctx, tenantId, after, markErased)) {
      out += `${JSON.stringify(record)}\n`;
      if (out.length >= 1 << 16) await write(out), (out = '');
    }
    return void (await write(out));
  }
  for (;;) {
    const batch: RecordedEvent[] = await service.ctx.eventStore.readAll({ after, tenantId, maxCount: 1000 });
    if (batch.length === 0) break;
    let out = '';
    const erased = new Set([...(await eventsOfErasedPatients(service.ctx.db.slonik, tenantId, batch)), ...(await eventsOfErasedUsers(service.ctx.db.slonik, tenantId, batch))]);
    for (const event of batch) {
      out += `${formatPosition(event.position).padEnd(16)} ${event.recordedAt}  ${event.type.padEnd(28)} ${event.streamName}#${event.streamRevision}  actor=${event.metadata.actor.type}:${event.metadata.actor.id}${erased.has(event.eventId) ? '  [personal data erased]' : ''}
`;
    }
    await write(out);
    after = batch[batch.length - 1]!.position;
  }
}

async function verifyEvents(service: Service, tenantId: string | undefined) {
  if (!tenantId) throw new UsageError('events verify needs --tenant <employerId>.');
  const { ctx } = service;
  await waitForSealing(ctx);
  const result = await verifyTenantChain(ctx, tenantId);
  console.log(result.ok ? describeSuccess(result) : describeFailure(result));
  if (!result.ok) process.exitCode = 1;
}

/** A progress bar on a terminal; plain lines (every 10%) otherwise, so logs stay readable. */
function createProgress(label: string, total: number) {
  if (process.stderr.isTTY) {
    const bar = new cliProgress.SingleBar({ format: `${label} [{bar}] {percentage}% {value}/{total} events`, stream: process.stderr }, cliProgress.Presets.shades_classic);
    bar.start(Math.max(total, 1), 0);
    return { update: (value: number) => bar.update(value), stop: () => bar.stop() };
  }
  let lastDecile = -1;
  return {
    update: (value: number) => {
      const decile = Math.floor((value / Math.max(total, 1)) * 10);
      if (decile > lastDecile) {
        lastDecile = decile;
        console.error(`${label}: ${value}/${total} events (${decile * 10}%)`);
      }
    },
    stop: () => {},
  };
}

main(process.argv.slice(2)).catch((error) => {
  if (error instanceof UsageError || error instanceof ConfigError || error instanceof DomainError) {
    console.error(error.message);
    process.exit(2);
  }
  console.error(error instanceof Error ? (error.stack ?? error.message) : error);
  process.exit(1);
});
