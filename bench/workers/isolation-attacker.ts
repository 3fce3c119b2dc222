// Tenant A's side of `npm run bench -- isolation`, in a worker thread: the attacker's client has an event
// loop of its own, so the time it spends building and sending its requests never delays tenant B's
// requests, whose latency is what the bench measures. Requests go through node:http with their bodies
// built once: a client that stops sending when the service has answered, as an attacker's would.
import { randomBytes } from 'node:crypto';
import { Agent, request as httpRequest } from 'node:http';
import { parentPort, workerData } from 'node:worker_threads';

export type AttackName = 'a' | 'b' | 'c' | 'd';

export type AttackerData = {
  url: string;
  attack: AttackName;
  loops: number;
  /** Requests a second at most, all loops together. */
  perSecond: number;
  phaseMs: number;
  aAddress: string;
  bAddress: string;
  a: { employerId: string; rawKey: string; webhookId: string };
};

type Answer = { status: number; retryAfter: string | null; code: string | null };
type Request = { method: string; path: string; from: string; headers: Record<string, string>; body?: Buffer };

const agent = new Agent({ keepAlive: true, maxSockets: 16 });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));

function send({ method, path, from, headers, body }: Request, url: string): Promise<Answer> {
  return new Promise((resolve) => {
    const request = httpRequest(`${url}${path}`, {
      method,
      agent,
      headers: { 'x-forwarded-for': from, ...headers, ...(body ? { 'content-length': String(body.length) } : {}) },
    });
    request.on('response', (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => {
        let code: string | null = null;
        try {
          const parsed = JSON.parse(Buffer.concat(chunks).toString('utf8'));
          code = parsed?.code ?? parsed?.issue?.[0]?.code ?? null;
        } catch {
          // not JSON
        }
        // The service answered before reading the whole body: stop sending the rest.
        if (body && !request.writableFinished) request.destroy();
        resolve({ status: response.statusCode ?? 0, retryAfter: (response.headers['retry-after'] as string | undefined) ?? null, code });
      });
    });
    request.on('error', () => resolve({ status: 0, retryAfter: null, code: null }));
    request.end(body);
  });
}

function requestsOf(data: AttackerData): (loop: number) => Request {
  const { a, aAddress, bAddress } = data;
  const keyed = (rawKey: string, extra: Record<string, string> = {}) => ({ 'x-api-key': rawKey, 'x-api-version': '2026-02-01', ...extra });
  switch (data.attack) {
    case 'a': {
      const junkXml = `<samlp:Response xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" ID="_${randomBytes(8).toString('hex')}" Version="2.0">` +
        '<junk a="bcdefg">hijk</junk>'.repeat(18_300) + '</samlp:Response>';
      const body = Buffer.from(new URLSearchParams({ SAMLResponse: Buffer.from(junkXml).toString('base64') }).toString());
      return () => ({ method: 'POST', path: `/api/auth/saml/callback/${a.employerId}`, from: aAddress, headers: { 'content-type': 'application/x-www-form-urlencoded' }, body });
    }
    case 'b': {
      const body = Buffer.from(`{"patients":[${'1,'.repeat(3_999_999)}1]}`);
      return () => ({ method: 'POST', path: '/api/employer/upload-cohort', from: aAddress, headers: keyed(a.rawKey, { 'content-type': 'application/json' }), body });
    }
    case 'c':
      return (loop) =>
        loop % 3 === 0 ? { method: 'POST', path: '/api/employer/export/csv', from: aAddress, headers: keyed(a.rawKey) }
        : loop % 3 === 1 ? { method: 'GET', path: '/api/fhir/$export', from: aAddress, headers: keyed(a.rawKey, { prefer: 'respond-async' }) }
        : { method: 'POST', path: `/api/employer/webhooks/${a.webhookId}/ping`, from: aAddress, headers: keyed(a.rawKey) };
    case 'd':
      return () => ({ method: 'GET', path: '/api/employer/webhooks', from: bAddress, headers: keyed(`mt_live_${randomBytes(32).toString('hex')}`) });
  }
}

/** `loops` loops until the phase ends, `perSecond` requests a second at most in all, each waiting out a 429 RATE_LIMITED's Retry-After. */
async function attack(data: AttackerData): Promise<Map<string, number>> {
  const answers = new Map<string, number>();
  const stopAt = performance.now() + data.phaseMs;
  const interval = (data.loops * 1000) / data.perSecond;
  const requestOf = requestsOf(data);
  await Promise.all(Array.from({ length: data.loops }, async (_, loop) => {
    while (performance.now() < stopAt) {
      const started = performance.now();
      const answer = await send(requestOf(loop), data.url);
      await sleep(Math.min(started + interval - performance.now(), stopAt - performance.now()));
      const kind = answer.code ? `${answer.status} ${answer.code}` : String(answer.status);
      answers.set(kind, (answers.get(kind) ?? 0) + 1);
      if (answer.status === 429 && answer.code === 'RATE_LIMITED') await sleep(Math.min(Number(answer.retryAfter ?? 1) * 1000, stopAt - performance.now()));
    }
  }));
  agent.destroy();
  return answers;
}

parentPort!.postMessage(await attack(workerData as AttackerData));
