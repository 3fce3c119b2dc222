// Verifies SAML responses in a pool of worker threads (piscina), so that parsing and signature checks,
// up to tens of milliseconds for a response at the size bounds, never block the event loop that
// answers every other request. The pool has SAML_VERIFY_THREADS threads, started on first use and run
// at a lower CPU priority than the service itself.
//
// Waiting responses are queued per client address (an IPv6 address by its /64) and served round-robin,
// so one address posting junk delays another's login by at most one verification per turn. Bounds:
// PER_CLIENT_WAITING_MAX per address (past it 429 RATE_LIMITED) and WAITING_MAX in all (past it 503
// SAML_BUSY), both with retry-after; a verification still running after VERIFY_TIMEOUT_MS is abandoned
// (its thread is replaced) and the response refused.
import { Piscina } from 'piscina';
import { DomainError } from '../event-store/decider.ts';
import { clientAddressKey } from '../http/token-buckets.ts';
import { SamlValidationError, type SamlSpSettings, type VerifiedSamlResponse } from './saml.ts';
import type { VerifyOutcome, VerifyTask } from './saml-verify-worker.ts';

export const PER_CLIENT_WAITING_MAX = 8;
export const WAITING_MAX = 64;
const VERIFY_TIMEOUT_MS = 10_000;
/** Threads live on while logins come in; an idle service gives their memory back. */
const IDLE_THREAD_MS = 5 * 60_000;
/** Linux nice increment of the threads: request handling and Postgres win the CPU when it is scarce. */
const THREAD_NICE_INCREMENT = 10;
const BUSY_RETRY_AFTER_SECONDS = 2;

export type SamlVerifierOptions = {
  threads: number;
  /** Tests only: another worker module (one that holds its tasks until released). */
  workerUrl?: URL;
  workerData?: unknown;
};

export type SamlVerifier = {
  /**
   * Verifies `samlResponse` (already screened) for `clientIp`'s turn: resolves with what it proves,
   * rejects with SamlValidationError when it is refused, or DomainError 429/503 when too many wait.
   */
  verify(clientIp: string, settings: SamlSpSettings, samlResponse: string): Promise<VerifiedSamlResponse>;
  /** Starts a thread if none runs, so that a login started now does not wait for one when its response arrives. */
  warm(): void;
  /** Responses waiting or being verified. */
  pending(): number;
  close(): Promise<void>;
};

type Waiting = { task: VerifyTask; resolve: (outcome: VerifyOutcome) => void; reject: (error: unknown) => void };

/** A refusal for too many waiting responses, with the retry-after the route sends. */
export class SamlVerifierBusyError extends DomainError {
  readonly retryAfterSeconds: number;
  constructor(status: 429 | 503, message: string) {
    super(status === 429 ? 'too_many' : 'unavailable', status === 429 ? 'RATE_LIMITED' : 'SAML_BUSY', message);
    this.retryAfterSeconds = status === 429 ? 1 : BUSY_RETRY_AFTER_SECONDS;
  }
}

export function createSamlVerifier(options: SamlVerifierOptions): SamlVerifier {
  const pool = new Piscina<VerifyTask, VerifyOutcome>({
    filename: (options.workerUrl ?? new URL('./saml-verify-worker.ts', import.meta.url)).href,
    minThreads: 0,
    maxThreads: options.threads,
    idleTimeout: IDLE_THREAD_MS,
    niceIncrement: THREAD_NICE_INCREMENT,
    workerData: options.workerData,
  });
  // Insertion order is the round-robin order: a client served goes to the back if it still waits.
  const queues = new Map<string, Waiting[]>();
  let waiting = 0;
  let running = 0;

  const runNext = () => {
    while (running < options.threads && queues.size > 0) {
      const [client, queue] = queues.entries().next().value!;
      const next = queue.shift()!;
      queues.delete(client);
      if (queue.length > 0) queues.set(client, queue);
      waiting -= 1;
      running += 1;
      pool
        .run(next.task, { signal: AbortSignal.timeout(VERIFY_TIMEOUT_MS) })
        .then(next.resolve, (error: unknown) =>
          next.reject((error as Error).name === 'AbortError' ? new SamlValidationError('MALFORMED', 'The SAML response could not be verified in time.') : error),
        )
        .finally(() => {
          running -= 1;
          runNext();
        });
    }
  };

  return {
    async verify(clientIp, settings, samlResponse) {
      const client = clientAddressKey(clientIp);
      const queue = queues.get(client) ?? [];
      if (queue.length >= PER_CLIENT_WAITING_MAX) throw new SamlVerifierBusyError(429, 'Too many SAML responses from this address are waiting to be verified; retry in a moment.');
      if (waiting >= WAITING_MAX) throw new SamlVerifierBusyError(503, 'Too many SAML responses are waiting to be verified; retry in a few seconds.');
      const outcome = await new Promise<VerifyOutcome>((resolve, reject) => {
        queue.push({ task: { settings, samlResponse }, resolve, reject });
        queues.set(client, queue);
        waiting += 1;
        runNext();
      });
      if ('refused' in outcome) throw new SamlValidationError(outcome.refused.reason, outcome.refused.message);
      return outcome.verified;
    },
    warm() {
      if (pool.threads.length === 0) pool.run({} as VerifyTask, { name: 'warm' }).catch(() => {});
    },
    pending: () => waiting + running,
    close: () => pool.destroy(),
  };
}
