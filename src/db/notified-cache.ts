// A per-process cache of database lookups that every process drops on NOTIFY: the payload names the
// key to forget, or is empty to forget everything (as after a lost LISTEN connection, when changes
// may have been missed). A load that started before an invalidation is not kept, concurrent loads of
// one key share a query, entries are reloaded after `ttlMs` anyway, and the oldest entry makes way
// once `maxEntries` are held (misses are cached too, so a flood of unknown keys stays in memory).
import type { Notifications } from './notifications.ts';

export type NotifiedCache<Value> = {
  get(key: string): Promise<Value>;
  /** Forgets `key` in this process at once ('' forgets everything). */
  invalidate(key: string): void;
  stop(): void;
};

export async function createNotifiedCache<Value>(options: {
  notifications: Notifications;
  channel: string;
  load: (key: string) => Promise<Value>;
  ttlMs: number;
  maxEntries: number;
  clock?: () => number;
}): Promise<NotifiedCache<Value>> {
  const clock = options.clock ?? Date.now;
  const entries = new Map<string, { value: Value; loadedAt: number }>();
  const loading = new Map<string, Promise<Value>>();
  // Bumped by every invalidation: a load that started before one must not keep what it read.
  let generation = 0;

  const invalidate = (key: string) => {
    generation += 1;
    if (key === '') entries.clear();
    else entries.delete(key);
  };
  const stop = await options.notifications.listen(options.channel, invalidate);

  const load = async (key: string): Promise<Value> => {
    const startedAt = generation;
    const value = await options.load(key);
    if (generation === startedAt) {
      if (entries.size >= options.maxEntries) entries.delete(entries.keys().next().value!);
      entries.set(key, { value, loadedAt: clock() });
    }
    return value;
  };

  return {
    get(key) {
      const entry = entries.get(key);
      if (entry && clock() - entry.loadedAt < options.ttlMs) return Promise.resolve(entry.value);
      let pending = loading.get(key);
      if (!pending) {
        pending = load(key).finally(() => loading.delete(key));
        loading.set(key, pending);
      }
      return pending;
    },
    invalidate,
    stop,
  };
}
