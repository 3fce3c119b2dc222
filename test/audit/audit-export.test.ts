// The audit API for auditors on the real service (TRUST_PROXY on): an audit:read key lists and exports;
// every entry carries the caller's address and user agent (none for a system actor); the NDJSON and
// CSV exports (read with csv-parse) hold the same entries, filtered, each with the chain hash that the
// offline verifier's own functions recompute from the replay; CSV cells that a spreadsheet would
// evaluate are neutralised.
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditRecords, waitForSealing, type EventRecord } from '../../src/audit/replay.ts';
import { auditExportEntry, type AuditExportEntryView } from '../../projections/audit/export.ts';
// @ts-expect-error: a standalone .mjs without types, as the auditor runs it
import { chainHash, sealedFieldsOf, verifyChain } from '../../scripts/verify-audit-chain.mjs';
import { createApiKey, keyHeaders } from '../support/api-keys.ts';
import { startTestService, type TestService } from '../support/service.ts';

const CRON_SECRET = 'cron-secret-for-audit-export-tests-0123';
const AUDITOR_ADDRESS = '203.0.113.7';
const FORMULA_AGENT = '=HYPERLINK("https://attacker.example/","click"), "quoted"';

describe('audit export and audit:read keys', () => {
  let service: TestService;
  let acme: { employerId: string; adminUserId: string; cookie: string };
  let globex: { employerId: string; adminUserId: string; cookie: string };
  let auditorKey: string;
  let formulaKeyId: string;

  const exportOf = async (headers: Record<string, string>, query: Record<string, string>) =>
    fetch(`${service.url}/api/employer/audit-events/export?${new URLSearchParams(query)}`, { headers });
  const ndjson = async (query: Record<string, string> = {}): Promise<AuditExportEntryView[]> => {
    const response = await exportOf(keyHeaders(auditorKey), { format: 'ndjson', ...query });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/x-ndjson/);
    const text = await response.text();
    return text === '' ? [] : text.trimEnd().split('\n').map((line) => auditExportEntry.parse(JSON.parse(line)));
  };
  const csv = async (query: Record<string, string> = {}): Promise<Array<Record<string, string>>> => {
    const response = await exportOf(keyHeaders(auditorKey), { format: 'csv', ...query });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/csv/);
    return parse(await response.text(), { columns: true, record_delimiter: '\r\n' }) as Array<Record<string, string>>;
  };

  beforeAll(async () => {
    service = await startTestService({ env: { TRUST_PROXY: 'true', CRON_SECRET } });
    acme = await service.createTenant();
    globex = await service.createTenant();
    auditorKey = (await createApiKey(service, acme, { scopes: ['audit:read'], name: 'auditor' })).rawKey;
    // A key made by a caller behind a proxy, with a user agent a spreadsheet would evaluate.
    const created = await fetch(`${service.url}/api/employer/api-keys`, {
      method: 'POST',
      headers: { ...service.sessionHeaders(acme.cookie), 'content-type': 'application/json', 'x-forwarded-for': AUDITOR_ADDRESS, 'user-agent': FORMULA_AGENT },
      body: JSON.stringify({ name: '-2+3', scopes: ['cohort:read'] }),
    });
    expect(created.status).toBe(201);
    formulaKeyId = ((await created.json()) as { id: string }).id;
    await createApiKey(service, globex, { scopes: ['cohort:read'], name: 'globex key' });
    // The monthly review: audit entries of a system actor.
    expect((await fetch(`${service.url}/api/cron/api-key-inventory-review`, { headers: { authorization: `Bearer ${CRON_SECRET}` } })).status).toBe(200);
    await waitForSealing(service.ctx);
  }, 60_000);

  afterAll(async () => {
    await service?.stop();
  });

  it('lets an audit:read key list the entries; a key without the scope is refused', async () => {
    const listed = await fetch(`${service.url}/api/employer/audit-events`, { headers: keyHeaders(auditorKey) });
    expect(listed.status).toBe(200);
    expect(((await listed.json()) as { entries: unknown[] }).entries.length).toBeGreaterThan(0);
    const other = (await createApiKey(service, acme, { scopes: ['cohort:read', 'export:read'], name: 'not an auditor' })).rawKey;
    for (const url of ['/api/employer/audit-events', '/api/employer/audit-events/export?format=csv']) {
      const refused = await fetch(`${service.url}${url}`, { headers: keyHeaders(other) });
      expect(refused.status).toBe(403);
      expect(((await refused.json()) as { code: string }).code).toBe('INSUFFICIENT_SCOPE');
    }
    // The key made here is audited too: the tests after this one expect every entry sealed.
    await waitForSealing(service.ctx);
  });

  it("records the caller's address after TRUST_PROXY and its user agent; none for a system actor", async () => {
    const entries = await ndjson();
    const created = entries.find((entry) => entry.action === 'api_key.created' && entry.target?.id === formulaKeyId)!;
    expect(created).toMatchObject({ ipAddress: AUDITOR_ADDRESS, userAgent: FORMULA_AGENT, actor: { type: 'user', id: acme.adminUserId } });
    const auditor = entries.find((entry) => entry.action === 'api_key.created' && entry.details.name === 'auditor')!;
    expect(auditor.ipAddress).toBe('127.0.0.1');
    const systemEntries = entries.filter((entry) => entry.actor.type === 'system');
    expect(systemEntries.length).toBeGreaterThan(0);
    expect(systemEntries.every((entry) => entry.ipAddress === null && entry.userAgent === null)).toBe(true);
    const listed = (await (await fetch(`${service.url}/api/employer/audit-events?action=api_key.created`, { headers: keyHeaders(auditorKey) })).json()) as { entries: AuditExportEntryView[] };
    expect(listed.entries.find((entry) => entry.target?.id === formulaKeyId)).toMatchObject({ ipAddress: AUDITOR_ADDRESS, userAgent: FORMULA_AGENT });
  });

  it('exports every entry oldest first, each with the chain hash the verifier recomputes from the replay', async () => {
    const entries = await ndjson();
    const times = entries.map((entry) => entry.occurredAt);
    expect([...times].sort()).toEqual(times);
    const records: EventRecord[] = [];
    for await (const record of auditRecords(service.ctx, acme.employerId)) if ('eventId' in record) records.push(record);
    expect((await verifyChain(records)).ok).toBe(true);
    const recordOf = new Map(records.map((record) => [record.eventId, record]));
    for (const entry of entries) {
      const record = recordOf.get(entry.id)!;
      expect(entry.chain).toEqual({ seq: record.seq, prevHash: record.prevHash, hash: record.hash });
      expect(chainHash(entry.chain!.prevHash, sealedFieldsOf(record))).toBe(entry.chain!.hash);
    }
    const globexIds = new Set((await fetch(`${service.url}/api/employer/audit-events`, { headers: service.sessionHeaders(globex.cookie) }).then((response) => response.json()) as { entries: Array<{ id: string }> }).entries.map((entry) => entry.id));
    expect(globexIds.size).toBeGreaterThan(0);
    expect(entries.some((entry) => globexIds.has(entry.id))).toBe(false);
  });

  it('exports the same entries as CSV, every formula-like cell neutralised', async () => {
    const entries = await ndjson();
    const rows = await csv();
    expect(Object.keys(rows[0]!)).toEqual(['id', 'occurredAt', 'action', 'actorType', 'actorId', 'targetType', 'targetId', 'ipAddress', 'userAgent', 'requestId', 'details', 'chainSeq', 'chainPrevHash', 'chainHash']);
    expect(rows.map((row) => [row.id, row.occurredAt, row.action, row.chainSeq, row.chainHash])).toEqual(
      entries.map((entry) => [entry.id, entry.occurredAt, entry.action, String(entry.chain!.seq), entry.chain!.hash]));
    const created = rows.find((row) => row.targetId === formulaKeyId && row.action === 'api_key.created')!;
    expect(created.userAgent).toBe(`'${FORMULA_AGENT}`);
    expect(created.ipAddress).toBe(AUDITOR_ADDRESS);
    expect(JSON.parse(created.details!)).toMatchObject({ name: '-2+3' });
    expect(rows.find((row) => row.actorType === 'system')).toMatchObject({ ipAddress: '', userAgent: '' });
  });

  it('filters by action (exact or prefix) and time range, in both formats, and refuses bad parameters with 400', async () => {
    const everything = await ndjson();
    const created = await ndjson({ action: 'api_key.created' });
    expect(created.length).toBe(everything.filter((entry) => entry.action === 'api_key.created').length);
    expect((await csv({ action: 'api_key.' })).length).toBe(everything.filter((entry) => entry.action.startsWith('api_key.')).length);
    const middle = everything[Math.floor(everything.length / 2)]!;
    const fromMiddle = await ndjson({ from: middle.occurredAt });
    expect(fromMiddle.map((entry) => entry.id)).toEqual(everything.filter((entry) => entry.occurredAt >= middle.occurredAt).map((entry) => entry.id));
    const beforeMiddle = await csv({ to: middle.occurredAt });
    expect(beforeMiddle.map((row) => row.id)).toEqual(everything.filter((entry) => entry.occurredAt < middle.occurredAt).map((entry) => entry.id));
    expect(await ndjson({ to: everything[0]!.occurredAt })).toEqual([]);
    const badQueries: Array<Record<string, string>> = [{}, { format: 'xml' }, { format: 'csv', from: 'yesterday' }, { format: 'csv', action: "x' OR 1=1" }];
    for (const query of badQueries) {
      const response = await exportOf(keyHeaders(auditorKey), query);
      expect(response.status).toBe(400);
      expect(((await response.json()) as { code: string }).code).toBe('VALIDATION_ERROR');
    }
  });
});
