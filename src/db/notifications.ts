// One LISTEN connection per process, shared by everything that wants to be woken by the database
// (new events, projection checkpoints, API-key changes). Reconnects after a dropped connection and
// then wakes every listener, since notifications may have been missed while it was down.
//
// It also knows whether other processes of this service listen on the same database: its connection
// carries the application name `employer-integrations listener`, so pg_stat_activity shows them, and
// on connecting it announces itself (NOTIFY employer_integrations_listeners), so the others know at
// once. A process alone needs no NOTIFY round trip through the database to reach its own listeners:
// `publishLocally` reaches them at once, and senders skip the NOTIFY when `peersListening()` is false.
import { randomUUID } from 'node:crypto';
import pg from 'pg';

export type Notifications = {
  /** This process's id among the service's listeners; senders put it in payloads so it can ignore its own. */
  readonly instanceId: string;
  /** Connects, announcing this process to the others; awaited before a process's first append, so they hear of it first. */
  ready(): Promise<void>;
  /** Calls `listener` with the payload of each NOTIFY on `channel`; returns an unsubscribe function. Does not fail while the database is down: listening starts when it is back. */
  listen(channel: string, listener: (payload: string) => void): Promise<() => void>;
  /** Delivers `payload` to this process's listeners of `channel` now, without the database. */
  publishLocally(channel: string, payload: string): void;
  /**
   * Whether another process of this service has a listening connection to this database: learnt from
   * the announcement of each process that connects, and checked in the background at most every
   * PEER_CHECK_MS (1 s), which notices those that left. True until first known, and in a process that
   * never listens.
   */
  peersListening(): boolean;
  close(): Promise<void>;
};

const LISTENER_APPLICATION_NAME = 'employer-integrations listener';
const LISTENERS_CHANNEL = 'employer_integrations_listeners';
const PEER_CHECK_MS = 1000;

export function createNotifications(connectionUri: string, options: { peerCheckMs?: number } = {}): Notifications {
  const peerCheckMs = options.peerCheckMs ?? PEER_CHECK_MS;
  const instanceId = randomUUID();
  const listeners = new Map<string, Set<(payload: string) => void>>();
  let client: pg.Client | null = null;
  let connecting: Promise<pg.Client> | null = null;
  let closed = false;

  const deliver = (channel: string, payload: string) => {
    for (const listener of listeners.get(channel) ?? []) listener(payload);
  };

  const connect = (): Promise<pg.Client> => {
    if (client) return Promise.resolve(client);
    connecting ??= (async () => {
      const next = new pg.Client({ connectionString: connectionUri, application_name: LISTENER_APPLICATION_NAME });
      next.on('notification', (message) => {
        if (message.channel === LISTENERS_CHANNEL) {
          if (message.payload !== instanceId) peerJoined();
        } else deliver(message.channel, message.payload ?? '');
      });
      next.on('error', () => {
        if (client !== next) return; // one that failed while connecting, or was replaced already
        client = null;
        scheduleReconnect(500);
      });
      try {
        await next.connect();
        for (const channel of [LISTENERS_CHANNEL, ...listeners.keys()]) await next.query(`LISTEN ${quoteIdentifier(channel)}`);
        await next.query('SELECT pg_notify($1, $2)', [LISTENERS_CHANNEL, instanceId]);
      } catch (error) {
        // The next connect() tries afresh (the database may be down for a while: reconnect retries).
        connecting = null;
        await next.end().catch(() => {});
        throw error;
      }
      client = next;
      connecting = null;
      return next;
    })();
    return connecting;
  };

  // Through a database outage: tried every second until it is back, then every listener is woken.
  let reconnectTimer: NodeJS.Timeout | null = null;
  const scheduleReconnect = (delayMs: number) => {
    if (closed || reconnectTimer) return;
    reconnectTimer = setTimeout(() => {
      reconnectTimer = null;
      void reconnect();
    }, delayMs).unref();
  };
  const reconnect = async () => {
    try {
      await connect();
      for (const set of listeners.values()) for (const listener of set) listener('');
    } catch {
      scheduleReconnect(1000);
    }
  };

  let peers = true;
  let peersCheckedAt = Number.NEGATIVE_INFINITY;
  let checkingPeers = false;
  // A check under way when a process joins may answer from before it joined: such an answer is dropped.
  let joins = 0;
  const peerJoined = () => {
    joins++;
    peers = true;
  };
  const checkPeers = () => {
    if (!client || checkingPeers || performance.now() - peersCheckedAt < peerCheckMs) return;
    checkingPeers = true;
    const joinsBefore = joins;
    client
      .query<{ found: boolean }>(
        `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
                        WHERE datname = current_database() AND application_name = $1 AND pid <> pg_backend_pid()) AS found`,
        [LISTENER_APPLICATION_NAME],
      )
      .then(({ rows }) => {
        if (joins === joinsBefore) peers = rows[0]!.found;
        peersCheckedAt = performance.now();
      })
      .catch(() => {})
      .finally(() => {
        checkingPeers = false;
      });
  };

  return {
    instanceId,
    async ready() {
      await connect();
    },
    async listen(channel, listener) {
      let set = listeners.get(channel);
      const isNewChannel = !set;
      if (!set) listeners.set(channel, (set = new Set()));
      set.add(listener);
      try {
        const connection = await connect();
        if (isNewChannel) await connection.query(`LISTEN ${quoteIdentifier(channel)}`);
      } catch {
        // The database is down: the reconnection LISTENs on every channel and wakes this listener too.
        scheduleReconnect(500);
      }
      return () => void set.delete(listener);
    },
    publishLocally: deliver,
    peersListening() {
      checkPeers();
      return peers;
    },
    async close() {
      closed = true;
      if (reconnectTimer) clearTimeout(reconnectTimer);
      const current = client;
      client = null;
      await current?.end().catch(() => {});
    },
  };
}

function quoteIdentifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}
