// Event registries for tests that create an event store themselves (the service builds its own from
// its capabilities' events).
import { z } from 'zod';
import { capabilities } from '../../src/capabilities.ts';
import { eventRegistryOf } from '../../src/main.ts';
import { createEventRegistry, eventSchema } from '../../src/event-store/schemas.ts';

/** Every event type of the service. */
export const serviceEventRegistry = eventRegistryOf(capabilities);

/** The event store's own tests write these made-up events. */
export const storeTestEvents = [
  eventSchema('Counted', z.object({ n: z.number().optional() })),
  eventSchema('ThingNamed', z.object({ name: z.string(), nested: z.object({ list: z.array(z.unknown()), flag: z.boolean() }) })),
  eventSchema('Raced', z.object({ n: z.string() })),
  eventSchema('Happened', z.object({})),
  eventSchema('Opened', z.object({})),
  eventSchema('Claimed', z.object({ i: z.number() })),
];
export const storeTestEventRegistry = createEventRegistry(storeTestEvents);
