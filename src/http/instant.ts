// Instants from requests (SCIM and FHIR filters, bodies, paging cursors) that both JavaScript's Date
// and Postgres's timestamptz read as the same instant. Syntax alone lets through what Postgres refuses
// (year 0000, an offset of 16 hours or more) and what Date reads as another year (an offset that
// carries 9999-12-31 into year 10000, which toISOString writes as +010000): such a value reaching a
// query or an event would be a 500 or a projection stopped on it.
import { z } from 'zod';
import { TIMESTAMP_MAX } from './limits.ts';

/** 0001-01-01T00:00:00Z: Postgres counts no year 0 (the year before 1 is 1 BC). */
export const EARLIEST_INSTANT_MS = Date.parse('0001-01-01T00:00:00Z');
/** 10000-01-01T00:00:00Z, the first instant after those accepted: ISO 8601 years have four digits. */
export const END_OF_INSTANTS_MS = Date.parse('+010000-01-01T00:00:00Z');

/** Postgres's bound on a zone offset (exclusive), in minutes. */
const OFFSET_LIMIT_MINUTES = 16 * 60;

/**
 * `2024-05-13T04:42:34.5Z`, `2024-05-13T06:42:34+02:00` (RFC 3339), or `2024-05-13 04:42:34.123456+00`
 * (Postgres's text form, which the paging cursors carry).
 */
const INSTANT = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2}):(\d{2})(\.\d+)?(?:Z|([+-])(\d{2})(?::?(\d{2}))?)$/i;

export const INSTANT_RANGE_MESSAGE = 'an instant from 0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z, with a zone offset under 16 hours';

/** Milliseconds since the epoch of a UTC calendar date and time; undefined unless each part is in its range (no 31 June, no hour 24, no leap second). */
export function utcMillis(year: number, month: number, day: number, hour = 0, minute = 0, second = 0): number | undefined {
  if (month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 59) return undefined;
  const date = new Date(0);
  // setUTCFullYear, not Date.UTC: Date.UTC reads years 0 to 99 as 1900 to 1999.
  date.setUTCFullYear(year, month - 1, day);
  date.setUTCHours(hour, minute, second);
  return date.getUTCDate() === day ? date.getTime() : undefined;
}

/** The instant `text` names, in milliseconds since the epoch; undefined unless it is one of the forms above and within INSTANT_RANGE_MESSAGE's range. */
export function instantMillis(text: string): number | undefined {
  const match = INSTANT.exec(text);
  if (!match) return undefined;
  const [year, month, day, hour, minute, second] = match.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  const [, , , , , , , fraction = '', sign, offsetHours = '0', offsetMinutes = '0'] = match;
  const local = utcMillis(year, month, day, hour, minute, second);
  const offset = Number(offsetHours) * 60 + Number(offsetMinutes);
  if (local === undefined || Number(offsetMinutes) > 59 || offset >= OFFSET_LIMIT_MINUTES) return undefined;
  const instant = local + Math.trunc(Number(`0${fraction}`) * 1000) - (sign === '-' ? -1 : 1) * offset * 60_000;
  return instant >= EARLIEST_INSTANT_MS && instant < END_OF_INSTANTS_MS ? instant : undefined;
}

/** An ISO 8601 instant with a zone (RFC 3339) that Postgres and Date read alike: every instant a body or query of the API takes. */
export const instantSchema = z.iso
  .datetime({ offset: true })
  .max(TIMESTAMP_MAX)
  .refine((text) => instantMillis(text) !== undefined, `must be ${INSTANT_RANGE_MESSAGE}`);
