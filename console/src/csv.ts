// Reads a cohort CSV in the browser (papaparse: RFC 4180 quoting, any line ending), so row errors are
// shown before anything is sent.
import Papa from 'papaparse';

export type CohortPatient = { email: string; firstName: string; lastName: string; birthDate?: string; externalId?: string; phone?: string };
export type RowError = { index: number; field: string; message: string };

const COLUMNS = ['email', 'firstName', 'lastName', 'birthDate', 'externalId', 'phone'] as const;
const REQUIRED = ['email', 'firstName', 'lastName'] as const;

/** The non-blank rows of a CSV, each a list of cells. */
export function parseCsv(text: string): string[][] {
  const { data } = Papa.parse<string[]>(text, { header: false, delimiter: ',', skipEmptyLines: 'greedy' });
  return data;
}

/** The patients of a CSV with a header row, or the errors of its rows (index 0 = first data row). */
export function readCohort(text: string): { patients: CohortPatient[]; errors: RowError[] } {
  const [header = [], ...rows] = parseCsv(text);
  const columns = header.map((name) => name.trim());
  const errors: RowError[] = [];
  for (const required of REQUIRED) if (!columns.includes(required)) errors.push({ index: -1, field: required, message: `the header has no "${required}" column` });
  if (errors.length > 0) return { patients: [], errors };
  const patients = rows.map((cells, index) => {
    const patient: Record<string, string> = {};
    columns.forEach((column, position) => {
      const cell = cells[position]?.trim() ?? '';
      if ((COLUMNS as readonly string[]).includes(column) && cell !== '') patient[column] = cell;
    });
    for (const required of REQUIRED) if (!patient[required]) errors.push({ index, field: required, message: 'is empty' });
    if (patient.email && !/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(patient.email)) errors.push({ index, field: 'email', message: `"${patient.email}" is not an e-mail address` });
    if (patient.birthDate && !/^\d{4}-\d{2}-\d{2}$/.test(patient.birthDate)) errors.push({ index, field: 'birthDate', message: 'must be YYYY-MM-DD' });
    return patient as CohortPatient;
  });
  if (rows.length === 0) errors.push({ index: -1, field: 'file', message: 'has no data rows' });
  return { patients, errors };
}

/** "Row 3, email: is empty" (the row as a spreadsheet numbers it: the header is row 1). */
export function describeRowError(error: RowError): string {
  return error.index < 0 ? `${error.field}: ${error.message}` : `Row ${error.index + 2}, ${error.field}: ${error.message}`;
}
