// A SCIM list page (RFC 7644 3.4.2) over one read model's table: the users (projections/tenants/) and
// the groups (projections/scim-groups/) list through it. A SCIM filter arrives already translated to
// SQL (src/scim/filter.ts), so Postgres (and its indexes) does the matching.
import { sql, type DatabasePool, type FragmentSqlToken } from 'slonik';
import { z } from 'zod';

/** `filter`: the SCIM filter as SQL on the query's alias; `count`: at most this many rows. */
export type ListQuery = { filter: FragmentSqlToken | null; startIndex: number; count: number };
export type Page<T> = { totalResults: number; startIndex: number; rows: T[] };

/**
 * One page in stable (created_at, id) order; the total comes with the rows (count(*) OVER ()), and
 * from a count of its own only when a page after the first, or of no rows (count=0), is empty.
 */
export async function listPage<T extends z.ZodObject>(
  pool: DatabasePool,
  spec: { rowSchema: T; columns: FragmentSqlToken; from: FragmentSqlToken; scope: FragmentSqlToken; order: FragmentSqlToken; query: ListQuery },
): Promise<Page<z.infer<T>>> {
  const where = spec.query.filter ? sql.fragment`${spec.scope} AND ${spec.query.filter}` : spec.scope;
  const startIndex = Math.max(1, spec.query.startIndex);
  const count = Math.max(0, spec.query.count);
  const rows = count === 0 ? [] : await pool.any(sql.type(spec.rowSchema.extend({ total_results: z.coerce.number() }))`
    SELECT ${spec.columns}, count(*) OVER () AS total_results FROM ${spec.from} WHERE ${where}
    ORDER BY ${spec.order} OFFSET ${startIndex - 1} LIMIT ${count}`);
  const first = rows[0] as { total_results: number } | undefined;
  // An empty first page means nothing matches (Okta's lookup before each create): no count needed.
  const totalResults = Number(
    first
      ? first.total_results
      : startIndex === 1 && count > 0
        ? 0
        : await pool.oneFirst(sql.type(z.object({ total: z.coerce.number() }))`SELECT count(*) AS total FROM ${spec.from} WHERE ${where}`),
  );
  return { totalResults, startIndex, rows: rows.map(({ total_results: _total, ...row }) => row as z.infer<T>) };
}
