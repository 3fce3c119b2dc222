// The whole service with a real HTTPS webhook receiver it trusts (the receiver's self-signed
// certificate), as the webhook, cohort, workflow, export, outage and console tests run it.
import type { Capability } from '../../src/capability.ts';
import type { Role } from '../../src/main.ts';
import type { WebhookEventMappings } from '../../src/webhooks/event-types.ts';
import { capabilitiesTrusting, webhookEnv } from '../webhooks/helpers.ts';
import { startHttpsReceiver, type HttpsReceiver, type Responder } from './https-receiver.ts';
import { startTestService, type TestService } from './service.ts';

export type ServiceWithReceiver = {
  service: TestService;
  receiver: HttpsReceiver;
  /** Stops the service, then closes the receiver. */
  stop: () => Promise<void>;
};

export async function startServiceWithReceiver(options: {
  /** Settings beside webhookEnv()'s. */
  env?: Record<string, string>;
  /** How the receiver answers (200 "ok" unless said). */
  respond?: Responder;
  eventMappings?: WebhookEventMappings;
  /** Capabilities beside the service's own. */
  extraCapabilities?: Capability[];
  /** Reuse a database (or a Postgres of the test's own). */
  databaseUri?: string;
  roles?: Role[];
} = {}): Promise<ServiceWithReceiver> {
  const receiver = await startHttpsReceiver();
  if (options.respond) receiver.respondWith(options.respond);
  let service: TestService;
  try {
    service = await startTestService({
      env: webhookEnv(options.env),
      capabilities: [...capabilitiesTrusting(receiver, options.eventMappings), ...(options.extraCapabilities ?? [])],
      ...(options.databaseUri ? { databaseUri: options.databaseUri } : {}),
      ...(options.roles ? { roles: options.roles } : {}),
    });
  } catch (error) {
    await receiver.close();
    throw error;
  }
  return {
    service,
    receiver,
    stop: async () => {
      await service.stop();
      await receiver.close();
    },
  };
}
