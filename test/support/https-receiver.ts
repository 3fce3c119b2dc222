// A real HTTPS webhook receiver for tests: listens on 127.0.0.1 with a self-signed certificate made
// at start (valid for 127.0.0.1 and localhost), records every request with its raw body and the
// TLS connection it came on, and answers as the test's responder says.
import { createServer, type Server } from 'node:https';
import type { IncomingHttpHeaders } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { generate } from 'selfsigned';

export type ReceivedRequest = {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  rawBody: Buffer;
  /** rawBody decoded as UTF-8 (what signature verifiers take). */
  body: string;
  /** 1 for the first TLS connection the receiver accepted, 2 for the next, ... */
  connectionId: number;
};

export type ReceiverResponse = {
  status?: number;
  headers?: Record<string, string>;
  body?: string;
  /** Never answer: the request stays open until the client gives up or the receiver closes. */
  hang?: boolean;
};

/** Decides the answer to one request; `index` counts from 0. Return a promise to answer later. */
export type Responder = (request: ReceivedRequest, index: number) => ReceiverResponse | Promise<ReceiverResponse>;

export type HttpsReceiver = {
  /** https://127.0.0.1:<port> (no trailing slash). */
  url: string;
  /** The self-signed certificate in PEM: pass it as `ca` to trust this receiver. */
  ca: string;
  requests: ReceivedRequest[];
  /** How many TLS connections the receiver has accepted so far. */
  connectionCount: () => number;
  respondWith: (responder: Responder) => void;
  close: () => Promise<void>;
};

const answerOk: Responder = () => ({ status: 200, body: 'ok' });

export async function startHttpsReceiver(): Promise<HttpsReceiver> {
  const pems = await generate([{ name: 'commonName', value: 'localhost' }], {
    keyType: 'ec',
    algorithm: 'sha256',
    extensions: [
      { name: 'basicConstraints', cA: true },
      { name: 'subjectAltName', altNames: [{ type: 2, value: 'localhost' }, { type: 7, ip: '127.0.0.1' }] },
    ],
  });
  const requests: ReceivedRequest[] = [];
  const connectionIds = new WeakMap<Socket, number>();
  let connections = 0;
  let responder = answerOk;

  const server: Server = createServer({ key: pems.private, cert: pems.cert }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', async () => {
      const rawBody = Buffer.concat(chunks);
      const received: ReceivedRequest = {
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        rawBody,
        body: rawBody.toString('utf8'),
        connectionId: connectionIds.get(req.socket) ?? 0,
      };
      const index = requests.push(received) - 1;
      const answer = await responder(received, index);
      if (answer.hang) return;
      res.writeHead(answer.status ?? 200, answer.headers ?? {});
      res.end(answer.body ?? '');
    });
  });
  server.on('secureConnection', (socket) => {
    connections += 1;
    connectionIds.set(socket, connections);
  });

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `https://127.0.0.1:${port}`,
    ca: pems.cert,
    requests,
    connectionCount: () => connections,
    respondWith: (next) => {
      responder = next;
    },
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        // Hanging and keep-alive connections would otherwise hold close() open.
        server.closeAllConnections();
      }),
  };
}
