// TXT look-ups for domain verification, through node:dns with a resolver of its own: the servers of
// EMAIL_DOMAIN_DNS_SERVERS (the system's when empty) and a time limit for the whole look-up,
// EMAIL_DOMAIN_DNS_TIMEOUT_MS, however many servers are tried.
import { Resolver } from 'node:dns/promises';
import { DomainError } from '../event-store/decider.ts';

/** The values of the TXT records at `name` (each record's strings joined); none when the name has none. */
export type TxtLookup = (name: string) => Promise<string[]>;

/** The name does not exist, or has no TXT record: an answer, not a failure. */
const NO_RECORDS = new Set(['ENOTFOUND', 'ENODATA']);

export function createTxtLookup(options: { servers: readonly string[]; timeoutMs: number }): TxtLookup {
  return async (name) => {
    const resolver = new Resolver({ timeout: options.timeoutMs, tries: 1 });
    if (options.servers.length > 0) resolver.setServers(options.servers);
    const deadline = setTimeout(() => resolver.cancel(), options.timeoutMs);
    try {
      return (await resolver.resolveTxt(name)).map((chunks) => chunks.join(''));
    } catch (error) {
      if (NO_RECORDS.has((error as NodeJS.ErrnoException).code ?? '')) return [];
      // Which failure it was (timeout, refusal, server failure) is not told: the look-up only proves a claim.
      throw new DomainError('unprocessable', 'DOMAIN_NOT_VERIFIED', `The DNS look-up of ${name} failed or did not answer within ${options.timeoutMs} ms; verify again later.`, {
        reason: 'lookup_failed',
      });
    } finally {
      clearTimeout(deadline);
    }
  };
}
