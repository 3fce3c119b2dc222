// The CSV form of the roster, built by Postgres (src/db/csv.ts): an export's rows never pass through
// this process, so formatting them blocks no other employer's requests.
import { CSV_LINE_END, csvLine, type CsvColumn } from '../db/csv.ts';

export const CSV_COLUMNS = ['id', 'email', 'firstName', 'lastName', 'birthDate', 'externalId', 'phone', 'createdAt', 'updatedAt'] as const;
export const CSV_HEADER = `${CSV_COLUMNS.join(',')}${CSV_LINE_END}`;

/**
 * The column of the roster query (projections/patients/queries.ts, rosterPageQuery) behind each CSV
 * column, and whether its text is free (else a timestamp or FHIR date, which never needs quoting).
 */
const ROSTER_COLUMN: Record<(typeof CSV_COLUMNS)[number], CsvColumn> = {
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

/** A roster row's CSV line (without its line end), over the columns of rosterPageQuery. */
export const rosterCsvLine = csvLine(CSV_COLUMNS.map((column) => ROSTER_COLUMN[column]));
