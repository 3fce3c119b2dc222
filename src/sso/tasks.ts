// The SSO capability's graphile-worker tasks:
// - saml-refusal-summaries (every minute): records the refused SAML callbacks of each finished minute
//   (saml-refusals.ts);
// - saml-metadata-refresh (daily): reads every IdP metadata URL again (saml-certificates.ts);
// - saml-certificate-expiry (daily, after the refresh): warns before the last valid IdP certificate expires;
// - sso-trust-mail: e-mails the employer's administrators about every change of SAML trust: proposed by
//   an API key (with what to do about it), confirmed, discarded, made directly in a session, or read from
//   the IdP's metadata; and the certificate expiry warnings. A job per event (the job dispatcher enqueues
//   it once the event is committed); a failed send is retried by graphile-worker, while the audit record
//   stands already.
import { X509Certificate } from 'node:crypto';
import type { Task, TaskList } from 'graphile-worker';
import type { AppContext } from '../app-context.ts';
import type { Actor, RecordedEvent } from '../event-store/port.ts';
import { eventOfJob, type EventJobPayload } from '../worker/dispatcher.ts';
import { adminEmailsOf } from '../../projections/tenants/queries.ts';
import { samlEnabledEmployers, samlMetadataSources } from '../../projections/sso/queries.ts';
import { refreshSamlMetadata, warnOfCertificateExpiry } from './commands.ts';
import type { SamlCertificateExpiryWarned, SamlMetadataRefreshed, SamlTrustChanges, SsoConfigurationEvent } from './events.ts';
import type { MetadataFetchOptions } from './idp-metadata.ts';
import { summariseSamlRefusals } from './saml-refusals.ts';
import { trustChangesOf } from './sso-configuration.ts';

export const REFUSAL_SUMMARIES_TASK = 'saml-refusal-summaries';
export const SSO_TRUST_MAIL_TASK = 'sso-trust-mail';
export const METADATA_REFRESH_TASK = 'saml-metadata-refresh';
export const CERTIFICATE_EXPIRY_TASK = 'saml-certificate-expiry';

const SCHEDULE_ACTOR = { type: 'system', id: 'saml-certificates' } as const;

export function ssoTasks(ctx: AppContext, metadataFetch: MetadataFetchOptions): TaskList {
  return {
    [REFUSAL_SUMMARIES_TASK]: async () => {
      const summary = await summariseSamlRefusals(ctx, new Date());
      if (summary.minutes.length > 0) ctx.logger.info(summary, 'SAML refusals recorded');
    },
    [SSO_TRUST_MAIL_TASK]: trustMailTask(ctx),
    [METADATA_REFRESH_TASK]: async () => refreshEveryIdpMetadata(ctx, metadataFetch, new Date()),
    [CERTIFICATE_EXPIRY_TASK]: async () => warnOfExpiringCertificates(ctx, new Date()),
  };
}

/** The daily refresh: each employer's metadata read again, one employer's trouble not stopping the others. */
export async function refreshEveryIdpMetadata(ctx: AppContext, metadataFetch: MetadataFetchOptions, now: Date): Promise<void> {
  for (const source of await samlMetadataSources(ctx.db.slonik)) {
    await refreshSamlMetadata(ctx, { tenantId: source.employer_id, actor: SCHEDULE_ACTOR }, { metadataUrl: source.saml_metadata_url, metadataFetch, now }).catch((error: unknown) =>
      ctx.logger.error({ err: error, employerId: source.employer_id }, 'SAML metadata refresh failed'),
    );
  }
}

/** The daily expiry check of every employer whose SAML is on. */
export async function warnOfExpiringCertificates(ctx: AppContext, now: Date): Promise<void> {
  for (const employerId of await samlEnabledEmployers(ctx.db.slonik)) {
    await warnOfCertificateExpiry(ctx, { tenantId: employerId, actor: SCHEDULE_ACTOR }, { now }).catch((error: unknown) =>
      ctx.logger.error({ err: error, employerId }, 'SAML certificate expiry check failed'),
    );
  }
}


function trustMailTask(ctx: AppContext): Task {
  return async (payload) => {
    const job = payload as EventJobPayload;
    const event = (await eventOfJob(ctx.eventStore, job)) as RecordedEvent<SsoConfigurationEvent> | undefined;
    if (!event || !job.tenantId) throw new Error(`event ${job.eventId} of ${job.streamName} not found`);
    const content = trustMail(event, `${ctx.config.PUBLIC_BASE_URL}/#/sso`);
    if (!content) return;
    const to = await adminEmailsOf(ctx.db.slonik, job.tenantId);
    if (to.length === 0) return void ctx.logger.warn({ employerId: job.tenantId, eventId: job.eventId }, 'no active admin to e-mail');
    await ctx.mailer.send({ to, ...content, messageId: `<${event.eventId}@employer-integrations>` });
  };
}

/** The mail about one event of the SSO configuration's stream; null when it changed no trust setting. */
function trustMail(event: RecordedEvent<SsoConfigurationEvent>, consoleUrl: string): { subject: string; text: string } | null {
  const by = describeActor(event.metadata.actor);
  const at = event.metadata.occurredAt;
  switch (event.type) {
    case 'SsoConfigurationUpdated': {
      const changes = trustChangesOf(event.data.changes);
      if (Object.keys(changes).length === 0) return null;
      return {
        subject: 'SAML sign-in settings changed',
        text: [`The SAML settings that decide who can sign in were changed by ${by} at ${at}, and are in effect now:`, '', ...describeChanges(changes), '', unrecognised(consoleUrl)].join('\n'),
      };
    }
    case 'SsoTrustChangeProposed':
      return {
        subject: 'SAML sign-in change waiting for your confirmation',
        text: [
          `${by} proposed a change of the SAML settings that decide who can sign in, at ${at} (change ${event.data.changeId}):`,
          '',
          ...describeChanges(event.data.changes),
          '',
          'It is not in effect: SAML signs in as before until an administrator confirms it in the console.',
          `Confirm or discard it at ${consoleUrl}. If you do not recognise it, discard it and revoke the API key.`,
        ].join('\n'),
      };
    case 'SsoTrustChangeConfirmed':
      return {
        subject: 'SAML sign-in change confirmed',
        text: [`${by} confirmed the SAML change ${event.data.changeId} at ${at}; in effect now:`, '', ...describeChanges(event.data.changes), '', unrecognised(consoleUrl)].join('\n'),
      };
    case 'SsoTrustChangeDiscarded':
      return {
        subject: 'SAML sign-in change discarded',
        text: `${by} discarded the proposed SAML change ${event.data.changeId} at ${at}. Nothing in effect changed.`,
      };
    case 'SamlMetadataRefreshed':
      return metadataMail(event.data, at, consoleUrl);
    // Shown in the console and audited; a daily mail about a failing URL would be noise.
    case 'SamlMetadataRefreshFailed':
      return null;
    case 'SamlCertificateExpiryWarned':
      return expiryMail(event.data, consoleUrl);
    // The service's own key: it changes nothing of whom SAML signs in (audited).
    case 'SamlSpKeyIssued':
    // The administrator who rotated it sees the overlap in the console.
    case 'ScimTokenOverlapStarted':
    case 'ScimTokenOverlapEnded':
      return null;
  }
}

function metadataMail(data: SamlMetadataRefreshed['data'], at: string, consoleUrl: string): { subject: string; text: string } | null {
  const certificateLines = (heading: string, pems: string[]) => (pems.length === 0 ? [] : [heading, ...pems.map((pem) => `    ${describeCertificate(new X509Certificate(pem))}`)]);
  const lines = [
    ...certificateLines('  Trusted from now:', data.addedCertificates),
    ...certificateLines(`  No longer in the metadata, trusted until ${data.retiringCertificates[0]?.trustedUntil ?? ''}:`, data.retiringCertificates.map((entry) => entry.certificate)),
    ...certificateLines('  No longer trusted:', data.removedCertificates),
    ...(data.entryPoint === null ? [] : [`  Sign-in URL: ${data.entryPoint}`]),
  ];
  if (lines.length === 0) return null;
  return {
    subject: "SAML IdP certificates updated from the IdP's metadata",
    text: [`The IdP metadata at ${data.metadataUrl} changed what SAML sign-in trusts, read at ${at}:`, '', ...lines, '', unrecognised(consoleUrl)].join('\n'),
  };
}

function expiryMail(data: SamlCertificateExpiryWarned['data'], consoleUrl: string): { subject: string; text: string } {
  return {
    subject: `SAML sign-in stops in ${data.daysBefore} day${data.daysBefore === 1 ? '' : 's'}: IdP certificate expiring`,
    text: [
      `The last valid signing certificate of your SAML identity provider expires at ${data.validTo}:`,
      `    ${data.subject} (SHA-256 ${data.fingerprintSha256})`,
      '',
      'After that no one can sign in with SAML. Have your IdP administrator roll the signing certificate; the service picks the new one up',
      `from the IdP's metadata URL (daily, or "Refresh now" at ${consoleUrl}), or set it in the SSO settings there.`,
    ].join('\n'),
  };
}

function describeActor(actor: Actor): string {
  if (actor.type === 'apiKey') return `API key ${actor.id}`;
  if (actor.type === 'user') return `user ${actor.id}`;
  return `${actor.type} ${actor.id}`;
}

/** One line per setting; certificates by subject and SHA-256 fingerprint, which an IdP's console shows too. */
function describeChanges(changes: SamlTrustChanges): string[] {
  return Object.entries(changes).flatMap(([setting, value]) => {
    if (setting === 'samlCertificates') {
      const certificates = (value as string[]).map((pem) => new X509Certificate(pem));
      if (certificates.length === 0) return ['  IdP certificates: none'];
      return ['  IdP certificates:', ...certificates.map((certificate) => `    ${describeCertificate(certificate)}`)];
    }
    return [`  ${setting}: ${value === null ? '(cleared)' : String(value)}`];
  });
}

function describeCertificate(certificate: X509Certificate): string {
  return `${certificate.subject.replace(/\n/g, ', ')} (SHA-256 ${certificate.fingerprint256}, valid to ${certificate.validToDate.toISOString()})`;
}

function unrecognised(consoleUrl: string): string {
  return `If you do not recognise this change, review the SSO settings at ${consoleUrl} at once.`;
}
