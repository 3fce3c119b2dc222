// The SSO capability's graphile-worker tasks:
// - saml-refusal-summaries (every minute): records the refused SAML callbacks of each finished minute
//   (saml-refusals.ts);
// - sso-trust-mail: e-mails the employer's administrators about every change of SAML trust: proposed by
//   an API key (with what to do about it), confirmed, discarded, or made directly in a session. A job
//   per event (the job dispatcher enqueues it once the event is committed); a failed send is retried
//   by graphile-worker, while the audit record stands already.
import { X509Certificate } from 'node:crypto';
import type { Task, TaskList } from 'graphile-worker';
import type { AppContext } from '../app-context.ts';
import type { Actor, RecordedEvent } from '../event-store/port.ts';
import { eventOfJob, type EventJobPayload } from '../worker/dispatcher.ts';
import { adminEmailsOf } from '../../projections/tenants/queries.ts';
import type { SamlTrustChanges, SsoConfigurationEvent } from './events.ts';
import { summariseSamlRefusals } from './saml-refusals.ts';
import { trustChangesOf } from './sso-configuration.ts';

export const REFUSAL_SUMMARIES_TASK = 'saml-refusal-summaries';
export const SSO_TRUST_MAIL_TASK = 'sso-trust-mail';

export function ssoTasks(ctx: AppContext): TaskList {
  return {
    [REFUSAL_SUMMARIES_TASK]: async () => {
      const summary = await summariseSamlRefusals(ctx, new Date());
      if (summary.minutes.length > 0) ctx.logger.info(summary, 'SAML refusals recorded');
    },
    [SSO_TRUST_MAIL_TASK]: trustMailTask(ctx),
  };
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
    case 'ScimTokenOverlapStarted':
    case 'ScimTokenOverlapEnded':
      return null;
  }
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
      return ['  IdP certificates:', ...certificates.map((certificate) => `    ${certificate.subject.replace(/\n/g, ', ')} (SHA-256 ${certificate.fingerprint256}, valid to ${certificate.validToDate.toISOString()})`)];
    }
    return [`  ${setting}: ${value === null ? '(cleared)' : String(value)}`];
  });
}

function unrecognised(consoleUrl: string): string {
  return `If you do not recognise this change, review the SSO settings at ${consoleUrl} at once.`;
}
