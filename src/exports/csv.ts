// The CSV form of the roster, built by Postgres: an export's rows never pass through this process, so
// formatting them blocks no other employer's requests. RFC 4180 (a field holding a comma, a quote or a
// line break, or starting or ending with a space, is quoted, its quotes doubled; CRLF line ends), and
// every cell that a spreadsheet would read as a formula neutralised (OWASP "CSV injection").
import { sql } from 'slonik';

export const CSV_COLUMNS = ['id', 'email', 'firstName', 'lastName', 'birthDate', 'externalId', 'phone', 'createdAt', 'updatedAt'] as const;
export const CSV_LINE_END = '\r\n';
export const CSV_HEADER = `${CSV_COLUMNS.join(',')}${CSV_LINE_END}`;

/**
 * The column of the roster query (projections/patients/queries.ts, rosterPageQuery) behind each CSV
 * column, and whether its text is free (else a timestamp or FHIR date, which never needs quoting).
 */
const ROSTER_COLUMN: Record<(typeof CSV_COLUMNS)[number], { column: string; freeText: boolean }> = {
  id: { column: 'id', freeText: true }, // a FHIR id may start with '-'
  email: { column: 'email', freeText: true },
  firstName: { column: 'first_name', freeText: true },
  lastName: { column: 'last_name', freeText: true },
  birthDate: { column: 'birth_date', freeText: false },
  externalId: { column: 'external_id', freeText: true },
  phone: { column: 'phone', freeText: true },
  createdAt: { column: 'created_iso', freeText: false },
  updatedAt: { column: 'updated_iso', freeText: false },
};

// A cell starting with =, +, -, @, tab or carriage return gets a leading apostrophe (and is quoted), so
// a spreadsheet shows it as text, never evaluates it, whatever follows (a line break included). One
// regular expression tells the common cell, written as it is, from the few that need either.
function csvCell({ column, freeText }: { column: string; freeText: boolean }) {
  const value = sql.identifier([column]);
  if (!freeText) return sql.fragment`coalesce(${value}, '')`;
  return sql.fragment`CASE
    WHEN ${value} IS NULL THEN ''
    WHEN ${value} !~ E'^[=+@\\t\\r -]|[",\\r\\n]| $' THEN ${value}
    WHEN ${value} ~ E'^[=+@\\t\\r-]' THEN '"''' || replace(${value}, '"', '""') || '"'
    ELSE '"' || replace(${value}, '"', '""') || '"' END`;
}

/** A roster row's CSV line (without its line end), over the columns of rosterPageQuery. */
export const rosterCsvLine = sql.fragment`concat_ws(',', ${sql.join(CSV_COLUMNS.map((column) => csvCell(ROSTER_COLUMN[column])), sql.fragment`, `)})`;
