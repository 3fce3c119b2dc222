// Search (src/patients/fhir/search.ts, projections/fhir-resources/search.ts), driven by fhir-kit-client:
// keyset pages through nextPage to the end, every search parameter, POST _search, the _count cap.
import { describe, expect, it } from 'vitest';
import { client, base, expectValid, newPatient } from './fhir-api.ts';

describe('search', () => {
  it('pages through nextPage to the end by keyset, every resource once, totals and links on each page', async () => {
    const family = `Paged${Date.now()}`;
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) ids.push((await client.create({ resourceType: 'Patient', body: newPatient({ name: [{ family, given: [`G${i}`] }] }) }) as any).id);

    let bundle = expectValid(await client.search({ resourceType: 'Patient', searchParams: { family: family.toLowerCase(), _count: 3 } }));
    const seen: string[] = [];
    const pages: any[] = [];
    for (;;) {
      pages.push(bundle);
      expect(bundle).toMatchObject({ resourceType: 'Bundle', type: 'searchset', total: 7 });
      expect(bundle.link.find((l: any) => l.relation === 'self')).toBeDefined();
      for (const entry of bundle.entry) {
        expect(entry.search.mode).toBe('match');
        expect(entry.fullUrl).toBe(`${base}/Patient/${entry.resource.id}`);
        seen.push(entry.resource.id);
      }
      const next = bundle.link.find((l: any) => l.relation === 'next');
      if (!next) break;
      // Paging state is in the query string of [base]/Patient.
      expect(next.url.startsWith(`${base}/Patient?`)).toBe(true);
      bundle = expectValid(await client.nextPage({ bundle }));
    }
    expect(pages.map((page) => page.entry.length)).toEqual([3, 3, 1]);
    expect(seen).toEqual(ids);
    const back = expectValid(await client.prevPage({ bundle: pages[2] }));
    expect(back.entry.map((e: any) => e.resource.id)).toEqual(ids.slice(3, 6));

    const newestFirst = expectValid(await client.search({ resourceType: 'Patient', searchParams: { family, _sort: '-_lastUpdated', _count: 10 } }));
    expect(newestFirst.entry.map((e: any) => e.resource.id)).toEqual([...ids].reverse());
  });

  it('finds by e-mail (any case), identifier, name, given, birthdate, _id, _lastUpdated; _count=0 gives the total only; POST _search', async () => {
    const body = newPatient({ birthDate: '1990-04-05' });
    const created = await client.create({ resourceType: 'Patient', body }) as any;
    const email = (body.telecom as { value: string }[])[0]!.value.toUpperCase();
    const only = async (searchParams: Record<string, string>) => {
      const bundle = expectValid(await client.search({ resourceType: 'Patient', searchParams }));
      return (bundle.entry ?? []).map((e: any) => e.resource.id);
    };
    expect(await only({ email })).toEqual([created.id]);
    expect(await only({ identifier: body.identifier[0]!.value })).toEqual([created.id]);
    expect(await only({ name: (body.name as { family: string }[])[0]!.family.slice(0, 6), _id: created.id })).toEqual([created.id]);
    expect(await only({ given: 'ad', _id: created.id })).toEqual([created.id]);
    expect(await only({ birthdate: '1990-04', _id: created.id })).toEqual([created.id]);
    expect(await only({ birthdate: 'gt1990-04-05', _id: created.id })).toEqual([]);
    expect(await only({ _lastUpdated: `ge${created.meta.lastUpdated.slice(0, 10)}`, _id: created.id })).toEqual([created.id]);
    const totalOnly = expectValid(await client.search({ resourceType: 'Patient', searchParams: { email, _count: 0 } }));
    expect(totalOnly.total).toBe(1);
    expect(totalOnly.entry).toBeUndefined();
    const posted = expectValid(await client.search({ resourceType: 'Patient', searchParams: { email }, options: { postSearch: true } } as never));
    expect(posted.entry.map((e: any) => e.resource.id)).toEqual([created.id]);
  });

  it('caps _count at 1000', async () => {
    const bundle = expectValid(await client.search({ resourceType: 'Patient', searchParams: { _count: 5000 } }));
    expect(bundle.link[0].url).toContain('_count=1000');
  });
});
