// SCIM filters translated to SQL and run on a real Postgres: each filter must select exactly the rows
// the RFC's semantics select, with values bound (never spliced into the SQL text).
import fc from 'fast-check';
import { sql, type DatabasePool } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ScimError } from '../../src/scim/errors.ts';
import { scimFilterToSql, type ScimAttributeMap } from '../../src/scim/filter.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { dateTimeText } from '../support/dates.ts';
import { FUZZ_SEED } from '../support/openapi-fuzz.ts';

const ALICE = '2c1f0e52-3a4b-4c5d-8e6f-7a8b9c0d1e2f';
const BOB = '9f8e7d6c-5b4a-4392-8170-6f5e4d3c2b1a';

const userAttributes: ScimAttributeMap = {
  id: { column: 'id', type: 'uuid' },
  username: { column: 'user_name', type: 'string' },
  externalid: { column: 'external_id', type: 'string', caseExact: true },
  displayname: { column: 'display_name', type: 'string' },
  active: { column: 'active', type: 'boolean' },
  'emails.value': { column: 'email', type: 'string' },
  'emails[type eq "work"].value': { column: 'work_email', type: 'string' },
  'name.givenname': { column: 'given_name', type: 'string' },
  'meta.created': { column: 'created_at', type: 'datetime' },
  'meta.lastmodified': { column: 'u.last_modified_at', type: 'datetime' },
};

const groupAttributes: ScimAttributeMap = {
  displayname: { column: 'display_name', type: 'string' },
  'members.value': { column: 'member_ids', type: 'uuid', multiValued: true },
};

let database: TestDatabase;
let pool: DatabasePool;

beforeAll(async () => {
  database = await createTestDatabase();
  pool = database.db.slonik;
  await pool.query(sql.unsafe`
    CREATE TABLE filter_test_users (
      handle text PRIMARY KEY,
      id uuid NOT NULL DEFAULT gen_random_uuid(),
      user_name text NOT NULL,
      external_id text,
      display_name text,
      active boolean NOT NULL,
      email text,
      work_email text,
      given_name text,
      created_at timestamptz NOT NULL,
      last_modified_at timestamptz NOT NULL
    )`);
  const users: [string, string | null, string, string | null, string | null, boolean, string | null, string | null, string][] = [
    // handle, id, userName, externalId, displayName, active, email, work email, lastModified
    ['alice', ALICE, 'Alice.Smith@Example.com', 'ext-A', 'Alice Smith', true, 'alice@example.com', 'alice@work.example', '2024-01-10T09:00:00Z'],
    ['bob', BOB, 'bob_jones@example.com', 'EXT-b', 'Bob 100% Jones', false, 'bob@example.com', null, '2024-03-01T12:00:00Z'],
    ['bobx', null, 'bobxjones@example.com', null, 'Bob 100 Jones', true, 'bobx@example.com', null, '2024-03-02T12:00:00Z'],
    ['carol', null, 'carol%x@example.org', null, null, true, 'carol@example.org', 'carol@work.example', '2024-06-01T00:00:00Z'],
    ['carl', null, 'carlx@example.org', null, '', true, null, null, '2024-06-01T00:00:00.001Z'],
    ['eve', null, 'eve@example.net', 'ext-e', 'C:\\Users\\eve', true, 'eve@example.net', null, '2024-07-01T00:00:00Z'],
    ['evan', null, 'evan@example.net', null, 'C:Users', true, 'evan@example.net', null, '2024-07-02T00:00:00Z'],
  ];
  for (const [handle, id, userName, externalId, displayName, active, email, workEmail, lastModified] of users) {
    await pool.query(sql.unsafe`
      INSERT INTO filter_test_users (handle, id, user_name, external_id, display_name, active, email, work_email, created_at, last_modified_at)
      VALUES (${handle}, coalesce(${id}::uuid, gen_random_uuid()), ${userName}, ${externalId}, ${displayName}, ${active},
              ${email}, ${workEmail}, '2024-01-01T00:00:00Z', ${lastModified})`);
  }
  await pool.query(sql.unsafe`CREATE TABLE filter_test_groups (handle text PRIMARY KEY, display_name text NOT NULL, member_ids uuid[] NOT NULL)`);
  await pool.query(sql.unsafe`
    INSERT INTO filter_test_groups VALUES
      ('both', 'Engineering', ARRAY[${ALICE}::uuid, ${BOB}::uuid]),
      ('alice-only', 'Design', ARRAY[${ALICE}::uuid]),
      ('empty', 'Empty', '{}')`);
});

afterAll(async () => {
  await database?.cleanup();
});

async function usersMatching(filter: string): Promise<string[]> {
  const condition = scimFilterToSql(filter, userAttributes);
  const handles = await pool.anyFirst(
    sql.type(z.object({ handle: z.string() }))`SELECT handle FROM filter_test_users AS u WHERE ${condition} ORDER BY handle`,
  );
  return [...handles];
}

async function groupsMatching(filter: string): Promise<string[]> {
  const condition = scimFilterToSql(filter, groupAttributes);
  const handles = await pool.anyFirst(
    sql.type(z.object({ handle: z.string() }))`SELECT handle FROM filter_test_groups WHERE ${condition} ORDER BY handle`,
  );
  return [...handles];
}

function rejection(filter: string, attributes: ScimAttributeMap = userAttributes): ScimError {
  try {
    scimFilterToSql(filter, attributes);
  } catch (error) {
    if (error instanceof ScimError) return error;
    throw error;
  }
  throw new Error(`expected ${filter} to be refused`);
}

describe('equality', () => {
  it('compares userName case-insensitively (Okta and Entra look users up this way before creating them)', async () => {
    expect(await usersMatching('userName eq "ALICE.SMITH@example.COM"')).toEqual(['alice']);
  });

  it('compares case-exact attributes as they are', async () => {
    expect(await usersMatching('externalId eq "EXT-b"')).toEqual(['bob']);
    expect(await usersMatching('externalId eq "ext-b"')).toEqual([]);
  });

  it('takes attribute names and operators in any case, with or without the core schema URN', async () => {
    expect(await usersMatching('USERNAME EQ "alice.smith@example.com"')).toEqual(['alice']);
    expect(await usersMatching('urn:ietf:params:scim:schemas:core:2.0:User:userName eq "bob_jones@example.com"')).toEqual(['bob']);
  });

  it('counts an absent value as not equal', async () => {
    expect(await usersMatching('externalId ne "ext-A"')).toEqual(['bob', 'bobx', 'carl', 'carol', 'evan', 'eve']);
  });

  it('matches an id only when the value is that UUID, and nothing for a value that is no UUID', async () => {
    expect(await usersMatching(`id eq "${ALICE.toUpperCase()}"`)).toEqual(['alice']);
    expect(await usersMatching('id eq "not-a-uuid"')).toEqual([]);
  });

  it('returns no rows for a filter that matches nothing (Entra Test Connection looks up a random GUID)', async () => {
    expect(await usersMatching('userName eq "5b0b9c1e-7d4f-4a36-9d0e-1f2a3b4c5d6e"')).toEqual([]);
  });

  it('binds values: quotes in a value are text, not SQL', async () => {
    expect(await usersMatching(`userName eq "x' OR '1'='1"`)).toEqual([]);
  });

  it('compares booleans', async () => {
    expect(await usersMatching('active eq false')).toEqual(['bob']);
    expect(await usersMatching('active ne true')).toEqual(['bob']);
  });
});

describe('substring operators', () => {
  it('treats % and _ in values as literal characters', async () => {
    expect(await usersMatching('userName co "l%x"')).toEqual(['carol']);
    expect(await usersMatching('userName sw "bob_"')).toEqual(['bob']);
    expect(await usersMatching('userName ew "_jones@EXAMPLE.com"')).toEqual(['bob']);
    expect(await usersMatching('displayName co "100%"')).toEqual(['bob']);
  });

  it('treats a backslash in a value as a literal character', async () => {
    expect(await usersMatching('displayName co ":\\Users"')).toEqual(['eve']);
  });

  it('matches sw and ew at the ends only', async () => {
    expect(await usersMatching('emails.value sw "CAROL@"')).toEqual(['carol']);
    expect(await usersMatching('emails.value ew ".net"')).toEqual(['evan', 'eve']);
  });
});

describe('presence', () => {
  it('holds for a non-empty value only', async () => {
    expect(await usersMatching('displayName pr')).toEqual(['alice', 'bob', 'bobx', 'evan', 'eve']);
    expect(await usersMatching('externalId pr')).toEqual(['alice', 'bob', 'eve']);
  });
});

describe('dates', () => {
  it('compares meta.lastModified with gt, lt, ge and le', async () => {
    expect(await usersMatching('meta.lastModified gt "2024-02-01T00:00:00Z" and meta.lastModified lt "2024-05-01T00:00:00Z"')).toEqual(['bob', 'bobx']);
    expect(await usersMatching('meta.lastModified ge "2024-06-01T00:00:00Z" and meta.lastModified le "2024-06-01T00:00:00.001Z"')).toEqual(['carl', 'carol']);
    expect(await usersMatching('meta.lastModified gt "2024-06-01T02:00:00+02:00"')).toEqual(['carl', 'evan', 'eve']);
  });

  it('refuses a value that is not an ISO 8601 date-time', () => {
    expect(rejection('meta.lastModified gt "yesterday"').scimType).toBe('invalidFilter');
  });

  it('refuses a date-time Postgres cannot read (issue 20: meta.lastModified gt "0000-01-01T00:00:00Z" was a 500), and takes the ends of the range', async () => {
    for (const value of ['0000-01-01T00:00:00Z', '2024-01-01T00:00:00+16:00', '9999-12-31T23:59:59-10:00']) {
      const error = rejection(`meta.lastModified gt "${value}"`);
      expect(error.scimType, value).toBe('invalidFilter');
      expect(error.message).toContain('0001-01-01T00:00:00Z');
    }
    expect(await usersMatching('meta.lastModified gt "0001-01-01T00:00:00Z" and meta.lastModified lt "9999-12-31T23:59:59Z"')).toHaveLength(7);
  });
});

describe('e-mails', () => {
  it('maps emails[type eq "work"].value to the work e-mail', async () => {
    expect(await usersMatching('emails[type eq "work"].value eq "ALICE@work.example"')).toEqual(['alice']);
    expect(await usersMatching('emails[type eq "work"].value co "@work."')).toEqual(['alice', 'carol']);
    expect(await usersMatching('emails[type eq "work"].value pr')).toEqual(['alice', 'carol']);
  });

  it('reads emails[type eq "work"] alone as "has a work e-mail"', async () => {
    expect(await usersMatching('emails[type eq "work"]')).toEqual(['alice', 'carol']);
  });

  it('reads emails[value eq "x"] as emails.value eq "x"', async () => {
    expect(await usersMatching('emails[value eq "bob@example.com"]')).toEqual(['bob']);
  });

  it('keeps a written-out "and" of a value path and emails.value as two conditions', async () => {
    // Alice has a work e-mail and her e-mail is alice@example.com; her work e-mail is not.
    expect(await usersMatching('emails[type eq "work"] and emails.value eq "alice@example.com"')).toEqual(['alice']);
    expect(await usersMatching('emails[type eq "work"].value eq "alice@example.com"')).toEqual([]);
  });

  it('refuses a filtered path that is not mapped', () => {
    const error = rejection('emails[type eq "home"].value eq "x@example.com"');
    expect(error.scimType).toBe('invalidFilter');
    expect(error.message).toContain('emails[type eq "home"].value');
  });
});

describe('logical operators', () => {
  it('combines and, or and not with parentheses', async () => {
    expect(await usersMatching('(userName sw "alice" or userName sw "bob") and not (active eq false)')).toEqual(['alice', 'bobx']);
    expect(await usersMatching('userName sw "alice" or userName sw "bob" and active eq false')).toEqual(['alice', 'bob']);
    expect(await usersMatching('not (userName sw "alice" or userName sw "bob") AND emails.value ew ".org"')).toEqual(['carol']);
  });

  it('makes not the complement even where a value is absent', async () => {
    expect(await usersMatching('not (emails[type eq "work"].value pr)')).toEqual(['bob', 'bobx', 'carl', 'evan', 'eve']);
    expect(await usersMatching('not (externalId eq "ext-A")')).toEqual(['bob', 'bobx', 'carl', 'carol', 'evan', 'eve']);
  });
});

describe('multi-valued columns', () => {
  it('matches a group when one member matches', async () => {
    expect(await groupsMatching(`members[value eq "${BOB}"]`)).toEqual(['both']);
    expect(await groupsMatching(`members.value eq "${ALICE}"`)).toEqual(['alice-only', 'both']);
    expect(await groupsMatching('members.value pr')).toEqual(['alice-only', 'both']);
    expect(await groupsMatching('displayName eq "engineering" and members.value eq "not-a-uuid"')).toEqual([]);
  });
});

describe('refusals', () => {
  it('refuses an unknown attribute with invalidFilter', () => {
    const error = rejection('nickName eq "Babs"');
    expect(error.status).toBe(400);
    expect(error.scimType).toBe('invalidFilter');
    expect(error.message).toContain('nickName');
  });

  it('refuses filters that do not parse', () => {
    for (const filter of ['userName eq', 'userName eq "a" and', '(userName eq "a"', 'userName is "a"', 'userName eq "a" )']) {
      expect(rejection(filter).scimType).toBe('invalidFilter');
    }
  });

  it('refuses attribute paths naming a prototype member with invalidFilter (issue 20: constructor pr and __proto__ pr were 500s)', () => {
    const filters = ['constructor pr', '__proto__ pr', 'toString eq "x"', 'name.constructor pr', 'emails[constructor pr]', 'emails[type eq "work"].__proto__ pr',
      'urn:ietf:params:scim:schemas:core:2.0:User:__proto__ pr', 'not (valueOf pr)', 'userName eq "a" or hasOwnProperty pr', 'Constructor.Prototype pr'];
    for (const filter of filters) {
      const error = rejection(filter);
      expect(error.scimType, filter).toBe('invalidFilter');
      expect(error.message, filter).toContain('names a prototype member');
    }
  });

  it('translates every filter into SQL that Postgres runs, or refuses it with 400 invalidFilter', async () => {
    const attribute = fc.constantFrom('userName', 'externalId', 'displayName', 'active', 'id', 'emails.value', 'emails[type eq "work"].value', 'name.givenName', 'meta.created',
      'Meta.LastModified', 'urn:ietf:params:scim:schemas:core:2.0:User:userName', 'nickName', 'constructor', '__proto__', 'toString', 'name.prototype');
    const value = fc.oneof(fc.string({ maxLength: 12 }).map((text) => JSON.stringify(text)), dateTimeText.map((text) => JSON.stringify(text)), fc.constantFrom('true', 'false', 'null', '42', '1e400'));
    const comparison = fc.oneof(
      fc.tuple(attribute, fc.constantFrom('eq', 'ne', 'co', 'sw', 'ew', 'gt', 'lt', 'ge', 'le'), value).map((parts) => parts.join(' ')),
      attribute.map((path) => `${path} pr`),
    );
    const { filter } = fc.letrec<{ filter: string }>((tie) => ({
      filter: fc.oneof(
        { depthSize: 'small', withCrossShrink: true },
        comparison,
        fc.tuple(tie('filter'), fc.constantFrom('and', 'or'), tie('filter')).map(([left, glue, right]) => `(${left}) ${glue} (${right})`),
        tie('filter').map((inner) => `not (${inner})`),
        fc.tuple(fc.constantFrom('emails', 'members'), comparison).map(([path, inner]) => `${path}[${inner}]`),
      ),
    }));
    let translated = 0;
    await fc.assert(
      fc.asyncProperty(filter, async (text) => {
        let condition;
        try {
          condition = scimFilterToSql(text, userAttributes);
        } catch (error) {
          expect(error, text).toBeInstanceOf(ScimError);
          expect({ status: (error as ScimError).status, scimType: (error as ScimError).scimType }, text).toEqual({ status: 400, scimType: 'invalidFilter' });
          return;
        }
        translated++;
        await pool.query(sql.unsafe`SELECT handle FROM filter_test_users AS u WHERE ${condition}`);
      }),
      { seed: FUZZ_SEED, numRuns: 400 },
    );
    expect(translated).toBeGreaterThan(20);
  });

  it('refuses a value of the wrong type and an operator that does not apply', () => {
    expect(rejection('active eq "False"').scimType).toBe('invalidFilter');
    expect(rejection('active gt true').scimType).toBe('invalidFilter');
    expect(rejection('userName eq 42').scimType).toBe('invalidFilter');
    expect(rejection('meta.lastModified co "2024"').scimType).toBe('invalidFilter');
  });
});
