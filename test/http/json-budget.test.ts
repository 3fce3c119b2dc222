// The scan that bounds a JSON body before it is parsed counts what JSON.parse would build: values (every
// scalar, array and object), nesting, and the items of the array a top-level field holds, however the
// body is cut into chunks.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DomainError } from '../../src/event-store/decider.ts';
import { JsonBudgetScan, type JsonBodyBudget } from '../../src/http/json-budget.ts';
import { JSON_DEPTH_MAX } from '../../src/http/limits.ts';
import { MAX_COHORT_ROWS } from '../../src/patients/cohort-row.ts';
import { COHORT_JSON_VALUES_MAX } from '../../src/patients/routes/cohorts.ts';

const UNBOUNDED: JsonBodyBudget = { values: Number.MAX_SAFE_INTEGER };
// The scan says which bound was passed; the route's hook makes the refusal.
const unused = () => new DomainError('too_large', 'UNUSED', 'not made by the scan');
const valuesOf = (value: unknown): number =>
  value !== null && typeof value === 'object' ? 1 + Object.values(value).reduce((sum: number, item) => sum + valuesOf(item), 0) : 1;

function scanInChunks(text: string, chunkBytes: number, budget = UNBOUNDED) {
  const body = Buffer.from(text);
  const scan = new JsonBudgetScan('patients');
  let verdict: ReturnType<JsonBudgetScan['feed']> = 'within';
  for (let offset = 0; offset < body.length && verdict === 'within'; offset += chunkBytes) verdict = scan.feed(body.subarray(offset, offset + chunkBytes), budget);
  return { scan, verdict };
}

describe('JsonBudgetScan', () => {
  it('counts the values and the items of the top-level field as JSON.parse builds them, in chunks of any size', () => {
    fc.assert(
      fc.property(fc.json({ maxDepth: 5 }), fc.json({ maxDepth: 3 }), fc.integer({ min: 1, max: 9 }), (patients, other, chunkBytes) => {
        const text = `{"other": ${other}, "patients": ${patients}}`;
        const parsed = JSON.parse(text) as { patients: unknown };
        const { scan } = scanInChunks(text, chunkBytes);
        expect(scan.values).toBe(valuesOf(parsed));
        expect(scan.items).toBe(Array.isArray(parsed.patients) ? parsed.patients.length : 0);
      }),
      { seed: 20, numRuns: 2_000 },
    );
  });

  it('stops at the first bound passed: items, values, nesting', () => {
    const budget: JsonBodyBudget = { values: 20, items: { field: 'patients', max: 3, refuse: unused } };
    expect(scanInChunks('{"patients":[1,2,3]}', 4, budget)).toMatchObject({ verdict: 'within' });
    expect(scanInChunks('{"patients":[1,2,3,4,5,6,7,8,9]}', 4, budget)).toMatchObject({ verdict: 'items', scan: { items: 4 } });
    expect(scanInChunks('{"other":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20],"patients":[]}', 4, budget)).toMatchObject({ verdict: 'values' });
    expect(scanInChunks(`${'['.repeat(JSON_DEPTH_MAX)}${']'.repeat(JSON_DEPTH_MAX)}`, 4).verdict).toBe('within');
    expect(scanInChunks(`${'['.repeat(JSON_DEPTH_MAX + 1)}${']'.repeat(JSON_DEPTH_MAX + 1)}`, 4).verdict).toBe('depth');
  });

  it('does not take a key spelled with escapes, or one nested deeper, for the top-level field', () => {
    expect(scanInChunks('{"p\\u0061tients":[1,2,3]}', 3).scan.items).toBe(0);
    expect(scanInChunks('{"x":{"patients":[1,2,3]},"y":"patients"}', 3).scan.items).toBe(0);
  });

  it(`fits ${MAX_COHORT_ROWS} cohort rows with every field at its longest in the cohort route's budget`, () => {
    const row = { email: `${'p'.repeat(60)}@${'e'.repeat(60)}.test`, firstName: 'A'.repeat(100), lastName: 'B'.repeat(100), birthDate: '1980-01-01', externalId: 'X'.repeat(100), phone: '+1 555 0100' };
    const text = JSON.stringify({ patients: Array.from({ length: MAX_COHORT_ROWS }, () => row) });
    const budget: JsonBodyBudget = { values: COHORT_JSON_VALUES_MAX, items: { field: 'patients', max: MAX_COHORT_ROWS, refuse: unused } };
    expect(scanInChunks(text, 64 * 1024, budget)).toMatchObject({ verdict: 'within', scan: { values: budget.values, items: MAX_COHORT_ROWS } });
  });
});
