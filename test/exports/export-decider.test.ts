// The export decider: given / when / then, no database.
import { describe, it } from 'vitest';
import type { ExportCompleted } from '../../src/exports/events.ts';
import { exportDecider } from '../../src/exports/export.ts';
import { deciderSpec } from '../support/decider.ts';

describe('export decider', () => {
  const given = deciderSpec(exportDecider);
  const data = { exportId: 'e1', kind: 'csv' as const, rowCount: 12, downloadUrl: 'https://api.example.test/api/employer/export/csv/exports/e1/download' };
  const completed: ExportCompleted = { type: 'ExportCompleted', data };
  it('records the completion once: a retried job decides nothing', () => {
    given([]).when({ type: 'CompleteExport', ...data }).then([completed]);
    given([completed]).when({ type: 'CompleteExport', ...data }).then([]);
  });
});
