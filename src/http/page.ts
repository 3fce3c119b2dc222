// Keyset paging for every list route: an opaque cursor naming the last row of a page by its sort key
// (created_at as Postgres prints it, to the microsecond, and the row's id), so the next page starts
// right after it whatever was inserted or deleted meanwhile, and costs an index range scan, never an
// OFFSET. The cursor names no employer: each query is scoped by the caller's employer, so a cursor
// taken from another employer's list only marks a position in the caller's own.
import { z, type ZodType } from 'zod';
import { DomainError } from '../event-store/decider.ts';
import { instantMillis } from './instant.ts';
import { TOKEN_MAX } from './limits.ts';

/** A position in a list ordered by (created_at, id). `at` is created_at::text, exact to the microsecond. */
export type Keyset = { at: string; id: string };

/** `limit` and `cursor` query parameters: a list's page size bounds and the previous page's nextCursor. */
export function pageQuery(limits: { default: number; max: number }) {
  return z.object({
    limit: z.coerce.number().int().min(1).max(limits.max).default(limits.default).meta({ description: `Rows per page, 1 to ${limits.max}.` }),
    cursor: z.string().max(TOKEN_MAX).optional().meta({ description: 'nextCursor of the previous page.' }),
  });
}

/** The key and webhook lists; the webhook delivery log keeps its own smaller page. */
export const LIST_PAGE = { default: 50, max: 200 } as const;

export function encodeCursor(keyset: Keyset | null): string | null {
  return keyset ? Buffer.from(JSON.stringify([keyset.at, keyset.id])).toString('base64url') : null;
}

/** A cursor's row id unless the list says otherwise; built once (a zod schema costs microseconds to build, on every list request). */
const DEFAULT_CURSOR_ID = z.string().max(100);

/** The keyset a cursor names; 400 INVALID_CURSOR for anything this service did not hand out. */
export function decodeCursor(cursor: string | undefined, id: ZodType<string> = DEFAULT_CURSOR_ID): Keyset | null {
  if (cursor === undefined) return null;
  try {
    const [at, parsedId] = z.tuple([z.string().max(64), id]).parse(JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')));
    // Postgres casts `at` back to timestamptz: anything else it would refuse is no cursor of ours.
    if (instantMillis(at) === undefined) throw new Error('bad time');
    return { at, id: parsedId };
  } catch {
    throw new DomainError('invalid', 'INVALID_CURSOR', 'The cursor is not one this service returned.');
  }
}

/**
 * Splits the `limit + 1` rows a page query fetched into the page and the keyset of its last row when
 * more rows follow (null at the end of the list).
 */
export function pageOf<Row>(rows: readonly Row[], limit: number, keysetOf: (row: Row) => Keyset): { page: Row[]; next: Keyset | null } {
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return { page, next: rows.length > limit && last !== undefined ? keysetOf(last) : null };
}

/**
 * Every page of a keyset-paged read, from `after` on, each next page read while the caller handles the
 * current one (reads and writes overlap), one page ahead at most: a slow consumer holds two pages.
 */
export async function* prefetchedPages<Page extends { next: Keyset | null }>(read: (after: Keyset | null) => Promise<Page>, after: Keyset | null = null): AsyncGenerator<Page> {
  const readAhead = (from: Keyset | null) => {
    const page = read(from);
    page.catch(() => {}); // a caller that stopped early never awaits it; one that awaits it sees the error
    return page;
  };
  let pending = readAhead(after);
  for (;;) {
    const page = await pending;
    if (page.next) pending = readAhead(page.next);
    yield page;
    if (!page.next) return;
  }
}
