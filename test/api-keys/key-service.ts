// The full service for API-key tests: the real capabilities, with the api-keys one on a clock the
// test controls, plus the probe routes behind the pipeline.
import { createApiKeysCapability } from '../../src/api-keys/capability.ts';
import { capabilities } from '../../src/capabilities.ts';
import { startTestService } from '../support/service.ts';
import { probeCapability } from '../support/api-keys.ts';

export type TestClock = { now: () => number; set: (ms: number) => void };

/** A clock that stands still (in the middle of a minute, so one rate-limit window) until the test moves it. */
export function testClock(): TestClock {
  let current = Math.floor(Date.now() / 60_000) * 60_000 + 30_000;
  return { now: () => current, set: (ms) => void (current = ms) };
}

export function startKeyService(options: Omit<Parameters<typeof startTestService>[0] & {}, 'capabilities'> & { clock?: TestClock } = {}) {
  const { clock, ...rest } = options;
  const apiKeys = createApiKeysCapability(clock ? { clock: clock.now } : {});
  return startTestService({
    ...rest,
    capabilities: [...capabilities.map((capability) => (capability.name === apiKeys.name ? apiKeys : capability)), probeCapability],
  });
}
