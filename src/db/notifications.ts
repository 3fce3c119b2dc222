// One LISTEN connection per process, shared by everything that wants to be woken by the database
// (new events, projection checkpoints, API-key changes). Reconnects after a dropped connection and
// then wakes every listener, since notifications may have been missed while it was down.
import pg from 'pg';

export type Notifications = {
  /** Calls `listener` with the payload of each NOTIFY on `channel`; returns an unsubscribe function. */
  listen(channel: string, listener: (payload: string) => void): Promise<() => void>;
  close(): Promise<void>;
};

export function createNotifications(connectionUri: string): Notifications {
  const listeners = new Map<string, Set<(payload: string) => void>>();
  let client: pg.Client | null = null;
  let connecting: Promise<pg.Client> | null = null;
  let closed = false;

  const connect = (): Promise<pg.Client> => {
    if (client) return Promise.resolve(client);
    connecting ??= (async () => {
      const next = new pg.Client({ connectionString: connectionUri });
      next.on('notification', (message) => {
        for (const listener of listeners.get(message.channel) ?? []) listener(message.payload ?? '');
      });
      next.on('error', () => {
        client = null;
        connecting = null;
        if (closed) return;
        setTimeout(() => void reconnect(), 500).unref();
      });
      await next.connect();
      for (const channel of listeners.keys()) await next.query(`LISTEN ${quoteIdentifier(channel)}`);
      client = next;
      connecting = null;
      return next;
    })();
    return connecting;
  };

  const reconnect = async () => {
    try {
      await connect();
      for (const set of listeners.values()) for (const listener of set) listener('');
    } catch {
      if (!closed) setTimeout(() => void reconnect(), 1000).unref();
    }
  };

  return {
    async listen(channel, listener) {
      let set = listeners.get(channel);
      const isNewChannel = !set;
      if (!set) listeners.set(channel, (set = new Set()));
      set.add(listener);
      const connection = await connect();
      if (isNewChannel) await connection.query(`LISTEN ${quoteIdentifier(channel)}`);
      return () => void set.delete(listener);
    },
    async close() {
      closed = true;
      const current = client;
      client = null;
      await current?.end().catch(() => {});
    },
  };
}

function quoteIdentifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}
