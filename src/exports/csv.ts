// The CSV form of the roster: RFC 4180 (csv-stringify quotes what needs quoting, CRLF line ends), and
// every cell that a spreadsheet would read as a formula neutralised (OWASP "CSV injection").
import { stringify } from 'csv-stringify/sync';
import type { RosterPatient } from './roster.ts';

export const CSV_COLUMNS = ['id', 'email', 'firstName', 'lastName', 'birthDate', 'externalId', 'phone', 'createdAt', 'updatedAt'] as const;

/** A cell starting with =, +, -, @, tab or carriage return gets a leading apostrophe, so it is shown as text, never evaluated. */
export function neutraliseFormula(cell: string): string {
  return /^[=+\-@\t\r]/.test(cell) ? `'${cell}` : cell;
}

export function csvLines(patients: RosterPatient[], withHeader: boolean): string {
  const records = patients.map((patient) => CSV_COLUMNS.map((column) => neutraliseFormula(patient[column] ?? '')));
  return stringify(withHeader ? [[...CSV_COLUMNS], ...records] : records, { record_delimiter: 'windows' });
}
