// Patients and cohorts: a CSV upload checked in the browser (row errors before anything is sent; the
// service's row errors shown the same way), the upload history and the roster with search, a page at a time.
import type { components } from '../../generated/api.d.ts';
import { api, ApiError, ok } from '../api.ts';
import { describeRowError, readCohort, type RowError } from '../csv.ts';
import { field, formatDate, h, notice, table } from '../dom.ts';
import type { Page } from '../main.ts';

type RosterPatient = components['schemas']['RosterPatient'];

export const patientsPage: Page = {
  title: 'Patients',
  async render(main) {
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
          const result = await ok(api.POST('/api/employer/upload-cohort', { body: { patients } }));
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

    // The roster, a page at a time (the API's cursor), all of it or those the search finds.
    const search = h('input', { type: 'search', name: 'search', maxlength: 254 });
    const searchForm = h('form', { role: 'search', 'aria-label': 'Search patients', onsubmit: (event: Event) => {
      event.preventDefault();
      void loadRoster(null).catch((error: unknown) => status.fail(error));
    } }, field('Search patients', search, 'An e-mail address, or the start of a first or last name.'), h('button', { type: 'submit' }, 'Search'));
    const rosterRows: RosterPatient[] = [];
    const more = h('button', { type: 'button', hidden: true }, 'Show more patients');
    let nextCursor: string | null = null;
    const showRoster = () => roster.replaceChildren(table('Patients', ['Name', 'E-mail', 'Birth date', 'External id'], rosterRows.map((patient) => [
      h('span', {}, [patient.firstName, patient.lastName].filter(Boolean).join(' ') || '—'), h('span', {}, patient.email ?? '—'),
      h('span', {}, patient.birthDate ?? '—'), h('span', {}, patient.externalId ?? '—'),
    ])), more);
    const loadRoster = async (cursor: string | null) => {
      const term = search.value.trim();
      const page = await ok(api.GET('/api/employer/patients', { params: { query: { ...(cursor ? { cursor } : {}), ...(term ? { search: term } : {}) } } }));
      if (cursor === null) rosterRows.length = 0;
      rosterRows.push(...page.patients);
      nextCursor = page.nextCursor;
      more.hidden = nextCursor === null;
      showRoster();
    };
    more.onclick = () => void loadRoster(nextCursor).catch((error: unknown) => status.fail(error));
    const refresh = async () => {
      const { cohorts } = await ok(api.GET('/api/employer/cohorts', { params: { query: {} } }));
      history.replaceChildren(table('Upload history', ['Cohort', 'Uploaded', 'Received', 'Created', 'Updated', 'Unchanged'], cohorts.map((cohort) => [
        h('code', {}, cohort.cohortId), h('span', {}, formatDate(cohort.uploadedAt)),
        h('span', {}, cohort.received), h('span', {}, cohort.created), h('span', {}, cohort.updated), h('span', {}, cohort.unchanged),
      ])));
      await loadRoster(null);
    };

    main.append(upload, status.element, rowErrors, history, searchForm, roster);
    await refresh();
  },
};
