// Patients and cohorts: a CSV upload checked in the browser (row errors before anything is sent; the
// service's row errors shown the same way), the upload history and the roster with search.
import { ApiError, callJson } from '../api.ts';
import { describeRowError, readCohort, type RowError } from '../csv.ts';
import { field, formatDate, h, notice, table } from '../dom.ts';
import type { Page } from '../main.ts';
import { requireRoute } from './pending.ts';

type UploadResult = { cohortId: string; received: number; created: number; updated: number; unchanged: number };
type Cohort = { id?: string; cohortId?: string; createdAt?: string; received?: number; created?: number; updated?: number; unchanged?: number };
type Patient = { id?: string; email: string; firstName: string; lastName: string; birthDate?: string | null; externalId?: string | null };

export const patientsPage: Page = {
  title: 'Patients',
  async render(main) {
    if (!(await requireRoute(main, '/api/employer/upload-cohort', 'Cohort upload'))) return;
    const status = notice();
    const rowErrors = h('ul', { class: 'row-errors', 'aria-label': 'Row errors' });
    const history = h('div');
    const roster = h('div');
    const file = h('input', { type: 'file', name: 'file', accept: '.csv,text/csv', required: true });

    const showErrors = (errors: RowError[]) => rowErrors.replaceChildren(...errors.map((error) => h('li', {}, describeRowError(error))));
    const upload = h('form', {
      'aria-label': 'Upload a cohort',
      onsubmit: async (event: Event) => {
        event.preventDefault();
        status.clear();
        showErrors([]);
        const chosen = file.files?.[0];
        if (!chosen) return status.fail('Choose a CSV file.');
        const { patients, errors } = readCohort(await chosen.text());
        if (errors.length > 0) {
          showErrors(errors);
          return status.fail(`Nothing was sent: ${errors.length} problem(s) in ${chosen.name}. Correct the file and upload it again.`);
        }
        try {
          const result = await callJson<UploadResult>('POST', '/api/employer/upload-cohort', { patients });
          upload.reset();
          await refresh();
          status.ok(`Cohort uploaded: ${result.received} received, ${result.created} created, ${result.updated} updated, ${result.unchanged} unchanged.`);
        } catch (error) {
          const rows = error instanceof ApiError ? (error.body as { errors?: RowError[] } | null)?.errors?.filter((row) => typeof row.index === 'number') : undefined;
          if (rows?.length) showErrors(rows);
          status.fail(error);
        }
      },
    },
      h('h2', {}, 'Upload a cohort'),
      field('CSV file', file, 'Header row with email, firstName, lastName; optional birthDate (YYYY-MM-DD), externalId, phone.'),
      h('button', { type: 'submit' }, 'Upload'),
    );

    const search = h('input', { type: 'search', name: 'search' });
    const searchForm = h('form', { role: 'search', 'aria-label': 'Search patients', onsubmit: (event: Event) => (event.preventDefault(), void refreshRoster()) },
      field('Search patients', search), h('button', { type: 'submit' }, 'Search'));

    const refreshRoster = async () => {
      const query = search.value.trim() ? `?search=${encodeURIComponent(search.value.trim())}` : '';
      const { patients } = await callJson<{ patients: Patient[] }>('GET', `/api/employer/patients${query}`);
      roster.replaceChildren(table('Patients', ['Name', 'E-mail', 'Birth date', 'External id'], patients.map((patient) => [
        h('span', {}, `${patient.firstName} ${patient.lastName}`), h('span', {}, patient.email), h('span', {}, patient.birthDate ?? '—'), h('span', {}, patient.externalId ?? '—'),
      ])));
    };
    const refresh = async () => {
      const { cohorts } = await callJson<{ cohorts: Cohort[] }>('GET', '/api/employer/cohorts');
      history.replaceChildren(table('Upload history', ['Cohort', 'Uploaded', 'Received', 'Created', 'Updated', 'Unchanged'], cohorts.map((cohort) => [
        h('code', {}, cohort.cohortId ?? cohort.id ?? ''), h('span', {}, formatDate(cohort.createdAt)),
        h('span', {}, cohort.received ?? '—'), h('span', {}, cohort.created ?? '—'), h('span', {}, cohort.updated ?? '—'), h('span', {}, cohort.unchanged ?? '—'),
      ])));
      await refreshRoster();
    };

    main.append(upload, status.element, rowErrors, history, searchForm, roster);
    await refresh();
  },
};
