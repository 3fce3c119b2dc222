// CSV lines built by Postgres, so that an export's rows never pass through this process as values:
// RFC 4180 (a field holding a comma, a quote or a line break, or starting or ending with a space, is
// quoted, its quotes doubled; CRLF line ends), and every cell that a spreadsheet would read as a
// formula neutralised (OWASP "CSV injection"). The roster's CSV export and the audit export use it.
import { sql } from 'slonik';

export const CSV_LINE_END = '\r\n';

/** A column of a query, and whether its text is free (else a timestamp, number or hash, which never needs quoting). */
export type CsvColumn = { column: string; freeText: boolean };

// A cell starting with =, +, -, @, tab or carriage return gets a leading apostrophe (and is quoted), so
// a spreadsheet shows it as text, never evaluates it, whatever follows (a line break included). One
// regular expression tells the common cell, written as it is, from the few that need either.
function csvCell({ column, freeText }: CsvColumn) {
  const value = sql.identifier([column]);
  if (!freeText) return sql.fragment`coalesce(${value}::text, '')`;
  return sql.fragment`CASE
    WHEN ${value} IS NULL THEN ''
    WHEN ${value} !~ E'^[=+@\\t\\r -]|[",\\r\\n]| $' THEN ${value}
    WHEN ${value} ~ E'^[=+@\\t\\r-]' THEN '"''' || replace(${value}, '"', '""') || '"'
    ELSE '"' || replace(${value}, '"', '""') || '"' END`;
}

/** The SQL expression of one CSV line (without its line end) over these columns of a query's rows. */
export function csvLine(columns: readonly CsvColumn[]) {
  return sql.fragment`concat_ws(',', ${sql.join(columns.map(csvCell), sql.fragment`, `)})`;
}
