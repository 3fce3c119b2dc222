// Outgoing e-mail: nodemailer over SMTP_URL; with no SMTP configured, each message is written as an
// .eml file to DATA_DIR/outbox (and a log line says where), so a development machine loses nothing.
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import nodemailer from 'nodemailer';
import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import { inSpan, SpanKind } from '../tracing.ts';

export type OutgoingMail = { to: readonly string[]; subject: string; text: string; messageId: string };
export type Mailer = { send(mail: OutgoingMail): Promise<void>; close(): void };

export function createMailer(config: Config, logger: Logger): Mailer {
  const from = config.MAIL_FROM;
  if (config.SMTP_URL) {
    const transport = nodemailer.createTransport(config.SMTP_URL);
    return {
      // The span counts recipients and never names them (nor the subject).
      send: (mail) =>
        inSpan('smtp send', { kind: SpanKind.CLIENT, attributes: { 'mail.recipients': mail.to.length } }, async () => {
          await transport.sendMail({ from, to: [...mail.to], subject: mail.subject, text: mail.text, messageId: mail.messageId });
        }),
      close: () => transport.close(),
    };
  }
  const outbox = join(config.DATA_DIR, 'outbox');
  const transport = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'unix' });
  return {
    async send(mail) {
      const { message } = await transport.sendMail({ from, to: [...mail.to], subject: mail.subject, text: mail.text, messageId: mail.messageId });
      await mkdir(outbox, { recursive: true });
      const file = join(outbox, `${new Date().toISOString().replace(/[:.]/g, '-')}-${mail.messageId.replace(/[^A-Za-z0-9-]/g, '')}.eml`);
      await writeFile(file, message as Buffer);
      logger.info({ file, recipients: mail.to.length, subject: mail.subject }, 'SMTP_URL is not set: e-mail written to the outbox');
    },
    close: () => transport.close(),
  };
}
