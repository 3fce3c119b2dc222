// An export's completion is recorded once (the record-once decider): given / when / then, no database.
import { describe, it } from 'vitest';
import type { ExportCompleted } from '../../src/exports/events.ts';
import { recordOnceDecider } from '../../src/event-store/record-once.ts';
import { deciderSpec } from '../support/decider.ts';

describe('export decider', () => {
  const given = deciderSpec(recordOnceDecider);
  const data = { exportId: 'e1', kind: 'csv' as const, rowCount: 12, downloadUrl: 'https://api.example.test/api/employer/export/csv/exports/e1/download' };
  const completed: ExportCompleted = { type: 'ExportCompleted', data };
  it('records the completion once: a retried job decides nothing', () => {
    given([]).when({ record: completed }).then([completed]);
    given([completed]).when({ record: completed }).then([]);
  });
});
