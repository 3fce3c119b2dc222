// Exports: the JSON and PDF exports as downloads, and a CSV export started, followed to completion
// (progress) and downloaded.
import type { components } from '../../generated/api.d.ts';
import { api, ok } from '../api.ts';
import { h, notice } from '../dom.ts';
import type { Page } from '../main.ts';

type CsvExportStatus = components['schemas']['CsvExportStatus'];
const FINISHED = new Set<CsvExportStatus['status']>(['completed', 'failed', 'expired']);

export const exportsPage: Page = {
  title: 'Exports',
  async render(main) {
    const status = notice();
    const progress = h('progress', { 'aria-label': 'CSV export progress', max: 100, hidden: true });
    const download = h('p');

    const followExport = async (exportId: string) => {
      progress.hidden = false;
      progress.removeAttribute('value');
      for (let wait = 250; ; wait = Math.min(wait * 2, 2000)) {
        const current = await ok(api.GET('/api/employer/export/csv/exports/{exportId}', { params: { path: { exportId } } }));
        progress.value = current.progress;
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
          const { exportId } = await ok(api.POST('/api/employer/export/csv', {}));
          status.ok('CSV export started…');
          const finished = await followExport(exportId);
          progress.value = 100;
          if (finished.status !== 'completed') return status.fail(`The CSV export ${finished.status === 'expired' ? 'expired' : 'failed'}; start another.`);
          status.ok(`CSV export ready (${finished.rowCount} rows).`);
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
