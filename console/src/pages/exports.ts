// Exports: the JSON and PDF exports as downloads, and a CSV export started, followed to completion
// (progress) and downloaded.
import { callJson } from '../api.ts';
import { h, notice } from '../dom.ts';
import type { Page } from '../main.ts';
import { requireRoute } from './pending.ts';

type CsvExport = { exportId?: string; id?: string; status: string; progress?: number; rowCount?: number; error?: string | null };
const FINISHED = new Set(['completed', 'complete', 'ready', 'succeeded', 'failed']);

export const exportsPage: Page = {
  title: 'Exports',
  async render(main) {
    if (!(await requireRoute(main, '/api/employer/export/csv', 'Export'))) return;
    const status = notice();
    const progress = h('progress', { 'aria-label': 'CSV export progress', max: 100, hidden: true });
    const download = h('p');

    const followExport = async (exportId: string) => {
      progress.hidden = false;
      progress.removeAttribute('value');
      for (let wait = 250; ; wait = Math.min(wait * 2, 2000)) {
        const current = await callJson<CsvExport>('GET', `/api/employer/export/csv/exports/${encodeURIComponent(exportId)}`);
        if (typeof current.progress === 'number') progress.value = current.progress;
        if (FINISHED.has(current.status)) return current;
        // Polling the export's status: the server says when it is done, the console asks again later.
        await new Promise((resolve) => setTimeout(resolve, wait));
      }
    };

    const start = h('button', {
      type: 'button',
      onclick: async () => {
        status.clear();
        download.replaceChildren();
        start.disabled = true;
        try {
          const started = await callJson<CsvExport>('POST', '/api/employer/export/csv', {});
          const exportId = started.exportId ?? started.id!;
          status.ok('CSV export started…');
          const finished = await followExport(exportId);
          progress.value = 100;
          if (finished.status === 'failed') return status.fail(`The CSV export failed${finished.error ? `: ${finished.error}` : '.'}`);
          status.ok(`CSV export ready${typeof finished.rowCount === 'number' ? ` (${finished.rowCount} rows)` : ''}.`);
          download.replaceChildren(h('a', { href: `/api/employer/export/csv/exports/${encodeURIComponent(exportId)}/download`, download: `export-${exportId}.csv` }, 'Download the CSV export'));
        } catch (error) {
          status.fail(error);
        } finally {
          start.disabled = false;
        }
      },
    }, 'Start a CSV export');

    main.append(
      h('section', { 'aria-label': 'Immediate exports' },
        h('h2', {}, 'JSON and PDF'),
        h('ul', {},
          h('li', {}, h('a', { href: '/api/employer/export', download: 'export.json' }, 'Download the JSON export')),
          h('li', {}, h('a', { href: '/api/employer/export/pdf', download: 'export.pdf' }, 'Download the PDF export')),
        ),
      ),
      h('section', { 'aria-label': 'CSV export' }, h('h2', {}, 'CSV'), start, progress, download),
      status.element,
    );
  },
};
