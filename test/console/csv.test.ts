// The cohort CSV as the console reads it in the browser, before anything is sent.
import { describe, expect, it } from 'vitest';
import { describeRowError, parseCsv, readCohort } from '../../console/src/csv.ts';

describe('the console\'s cohort CSV reader', () => {
  it('reads quoted fields, doubled quotes, commas and line breaks inside quotes, and CRLF', () => {
    expect(parseCsv('a,b\r\n"x, y","say ""hi""\nthere"\r\n\r\n')).toEqual([['a', 'b'], ['x, y', 'say "hi"\nthere']]);
  });

  it('gives the patients of a file with a header row, ignoring unknown columns', () => {
    expect(readCohort('email,firstName,lastName,team\nann@example.test, Ann ,Lee,blue\n')).toEqual({
      patients: [{ email: 'ann@example.test', firstName: 'Ann', lastName: 'Lee' }],
      errors: [],
    });
  });

  it('reports every bad row by its spreadsheet row number', () => {
    const { errors } = readCohort('email,firstName,lastName,birthDate\nann@example.test,Ann,Lee,1980-02-03\nnot-an-email,Bob,,03/02/1980\n');
    expect(errors.map(describeRowError)).toEqual([
      'Row 3, lastName: is empty',
      'Row 3, email: "not-an-email" is not an e-mail address',
      'Row 3, birthDate: must be YYYY-MM-DD',
    ]);
  });

  it('refuses a file without the required columns or without rows', () => {
    expect(readCohort('mail,first\nx,y\n').errors.map(describeRowError)).toEqual(['email: the header has no "email" column', 'firstName: the header has no "firstName" column', 'lastName: the header has no "lastName" column']);
    expect(readCohort('email,firstName,lastName\n').errors.map(describeRowError)).toEqual(['file: has no data rows']);
  });
});
