// A real SMTP server in the test process (smtp-server) that keeps every message it receives, parsed
// (mailparser), for the service to send to through SMTP_URL.
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { simpleParser, type ParsedMail } from 'mailparser';
import { SMTPServer } from 'smtp-server';

export type MailCatcher = { smtpUrl: string; mails: ParsedMail[]; close(): Promise<void> };

export async function startMailCatcher(): Promise<MailCatcher> {
  const mails: ParsedMail[] = [];
  const smtp = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onData(stream, _session, callback) {
      simpleParser(stream).then((mail) => {
        mails.push(mail);
        callback();
      }, callback);
    },
  });
  smtp.listen(0, '127.0.0.1');
  await once(smtp.server, 'listening');
  return {
    smtpUrl: `smtp://127.0.0.1:${(smtp.server.address() as AddressInfo).port}`,
    mails,
    close: () => new Promise<void>((resolve) => smtp.close(() => resolve())),
  };
}
