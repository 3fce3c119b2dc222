// The employer aggregate's rule, with no database: an employer is created once.
import { describe, it } from 'vitest';
import { employerDecider } from '../../src/tenants/employer.ts';
import type { EmployerCreated } from '../../src/tenants/events.ts';
import { deciderSpec } from '../support/decider.ts';

const given = deciderSpec(employerDecider);
const now = '2030-01-01T00:00:00.000Z';
const create = { type: 'CreateEmployer', employerId: 'emp_1', name: 'Acme', now } as const;
const created: EmployerCreated = { type: 'EmployerCreated', data: { employerId: 'emp_1', name: 'Acme', createdAt: now } };

describe('employer decider', () => {
  it('creates an employer', () => {
    given([]).when(create).then([created]);
  });

  it('refuses to create an employer that exists, whatever its name', () => {
    given([created]).when({ ...create, name: 'Acme Two' }).thenThrows({ kind: 'conflict', code: 'EMPLOYER_EXISTS' });
  });
});
