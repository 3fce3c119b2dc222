// Date and time text near the edges of what parses, for property tests of the parsers that hand
// instants to Postgres and Date (src/http/instant.ts, SCIM filters, FHIR date search): year 0000 and
// 9999, month 13, 31 June, hour 24, second 60, offsets up to 23:59 (Postgres stops under 16:00).
import fc from 'fast-check';

const pad = (width: number) => (value: number) => String(value).padStart(width, '0');

const year = fc.oneof(fc.constantFrom(0, 1, 1969, 1970, 2024, 9998, 9999), fc.integer({ min: 0, max: 9999 })).map(pad(4));
const month = fc.oneof(fc.constantFrom(1, 2, 12), fc.integer({ min: 0, max: 13 })).map(pad(2));
const day = fc.oneof(fc.constantFrom(1, 28, 29, 30, 31), fc.integer({ min: 0, max: 32 })).map(pad(2));
const hour = fc.oneof(fc.constantFrom(0, 23), fc.integer({ min: 0, max: 25 })).map(pad(2));
const minuteOrSecond = fc.oneof(fc.constantFrom(0, 59), fc.integer({ min: 0, max: 61 })).map(pad(2));
const fraction = fc.option(fc.stringMatching(/^\.\d{1,9}$/), { nil: '' });
const offset = fc
  .record({ sign: fc.constantFrom('+', '-'), hours: fc.oneof(fc.constantFrom(0, 14, 15, 16), fc.integer({ min: 0, max: 23 })), minutes: fc.constantFrom(0, 30, 45, 59, 60) })
  .map(({ sign, hours, minutes }) => `${sign}${pad(2)(hours)}:${pad(2)(minutes)}`);

/** An RFC 3339-like date and time with a zone (`Z`, `+05:30`), or the forms Postgres prints (a blank for the T, `+00`). */
export const dateTimeText: fc.Arbitrary<string> = fc
  .record({
    date: fc.tuple(year, month, day).map((parts) => parts.join('-')),
    separator: fc.constantFrom('T', 'T', ' '),
    time: fc.tuple(hour, minuteOrSecond, minuteOrSecond).map((parts) => parts.join(':')),
    fraction,
    zone: fc.oneof(fc.constantFrom('Z', 'z', '+00', '-03'), offset),
  })
  .map(({ date, separator, time, fraction, zone }) => `${date}${separator}${time}${fraction}${zone}`);

/** A FHIR date search value: YYYY[-MM[-DD[Thh:mm[:ss[.fff]][zone]]]] at some precision, with or without a prefix. */
export const fhirDateText: fc.Arbitrary<string> = fc
  .record({
    prefix: fc.constantFrom('', 'eq', 'gt', 'ge', 'lt', 'le', 'ap', 'sa'),
    year,
    month,
    day,
    time: fc.tuple(hour, minuteOrSecond).map((parts) => parts.join(':')),
    seconds: fc.option(fc.tuple(minuteOrSecond, fraction).map(([second, digits]) => `:${second}${digits}`), { nil: '' }),
    zone: fc.option(fc.oneof(fc.constant('Z'), offset), { nil: '' }),
    precision: fc.integer({ min: 1, max: 4 }),
  })
  .map(({ prefix, year, month, day, time, seconds, zone, precision }) =>
    prefix + [year, `-${month}`, `-${day}`, `T${time}${seconds}${zone}`].slice(0, precision).join(''),
  );
