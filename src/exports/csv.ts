// The CSV form of the roster: RFC 4180 (papaparse quotes what needs quoting, CRLF line ends), and
// every cell that a spreadsheet would read as a formula neutralised (OWASP "CSV injection").
import Papa from 'papaparse';
import type { RosterPatient } from './roster.ts';

export const CSV_COLUMNS = ['id', 'email', 'firstName', 'lastName', 'birthDate', 'externalId', 'phone', 'createdAt', 'updatedAt'] as const;

/**
 * Cells starting with =, +, -, @, tab or carriage return: papaparse gives them a leading apostrophe
 * (and quotes them), so a spreadsheet shows them as text, never evaluates them. The pattern is ours,
 * not papaparse's default, which ends in `.*$` and so misses a formula cell that holds a line break.
 */
export const FORMULA_START = /^[=+\-@\t\r]/;

export function csvLines(patients: RosterPatient[], withHeader: boolean): string {
  const rows = patients.map((patient) => CSV_COLUMNS.map((column) => patient[column] ?? ''));
  const text = Papa.unparse({ fields: [...CSV_COLUMNS], data: rows }, { header: withHeader, newline: '\r\n', escapeFormulae: FORMULA_START });
  // Every line ends in CRLF, the last too (unparse leaves it off after a record): chunks are joined as they are.
  return text === '' || text.endsWith('\r\n') ? text : `${text}\r\n`;
}
