// Shutdown is not held open by a connection that never sends a request (a browser's speculative
// preconnection): Node stops checking header timeouts once close() starts, so the server closes such
// connections itself. Connections that carried a request are left to fastify, which waits for their answers.
import { connect } from 'node:net';
import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import { startTestService } from '../support/service.ts';

describe('stopping the service', () => {
  it('closes a connection that sent nothing, instead of waiting for it', async () => {
    const service = await startTestService();
    const { hostname, port } = new URL(service.url);
    const silent = connect(Number(port), hostname);
    await once(silent, 'connect');
    const closedByServer = once(silent, 'close');
    await service.stop();
    await closedByServer;
    expect(silent.bytesWritten).toBe(0);
  }, 30_000);
});
