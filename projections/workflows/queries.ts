// The workflows read model as the routes and authentication see it. Every employer query is scoped by
// the caller's employer: another employer's id answers like one that does not exist (404).
import { sql, type CommonQueryMethods, type FragmentSqlToken } from 'slonik';
import { z } from 'zod';
import { notFound } from '../../src/http/errors.ts';
import { pageOf, type Keyset } from '../../src/http/page.ts';
import { PLATFORM_FAMILIES, simulationInput, simulationMonth, simulationTotals, type PlatformFamily } from '../../src/workflows/events.ts';

export const AUTHORIZATION_STATUSES = ['pending', 'approved', 'denied'] as const;
export const TAPERING_STATUSES = ['proposed', 'approved', 'declined'] as const;

export const authorizationView = z
  .object({
    id: z.string().meta({ example: 'auth_0f3c9a7e2b5d4e1f8a6c3b9d7e2f1a4c' }),
    patientId: z.string(),
    treatment: z.string(),
    justification: z.string(),
    requestedAt: z.string(),
    status: z.enum(AUTHORIZATION_STATUSES),
    review: z
      .object({ decision: z.enum(['approved', 'denied']), note: z.string().nullable(), reviewedBy: z.string(), reviewedAt: z.string() })
      .nullable()
      .meta({ description: 'null while pending. reviewedBy is the reviewing user or API key id.' }),
    createdAt: z.string(),
  })
  .meta({ id: 'Authorization' });
export type AuthorizationView = z.infer<typeof authorizationView>;

export const taperingStepView = z
  .object({
    startsOn: z.iso.date().max(10).meta({ description: 'First day of this step (YYYY-MM-DD).' }),
    dailyDose: z.number().nonnegative(),
    unit: z.string().min(1).max(20).meta({ example: 'mg' }),
  })
  .meta({ id: 'TaperingStep' });

export const taperingProposalView = z
  .object({
    id: z.string().meta({ example: 'tap_0f3c9a7e2b5d4e1f8a6c3b9d7e2f1a4c' }),
    patientId: z.string(),
    medication: z.string(),
    schedule: z.array(taperingStepView),
    status: z.enum(TAPERING_STATUSES),
    reason: z.string().nullable().meta({ description: "The platform's reason given with the decision." }),
    decidedAt: z.string().nullable(),
    createdAt: z.string(),
  })
  .meta({ id: 'TaperingProposal' });
export type TaperingProposalView = z.infer<typeof taperingProposalView>;

export const invoiceView = z
  .object({
    id: z.string().meta({ example: 'inv_0f3c9a7e2b5d4e1f8a6c3b9d7e2f1a4c' }),
    number: z.string(),
    amountMinor: z.number().int().meta({ description: 'In the currency\'s minor unit (cents for USD).' }),
    currency: z.string().meta({ description: 'ISO 4217 code, upper case.' }),
    period: z.object({ start: z.string(), end: z.string() }).meta({ description: 'Billing period, inclusive dates (YYYY-MM-DD).' }),
    status: z.enum(['issued', 'paid']),
    paidAt: z.string().nullable(),
    createdAt: z.string(),
  })
  .meta({ id: 'Invoice' });
export type InvoiceView = z.infer<typeof invoiceView>;

export const simulationView = z
  .object({
    id: z.string().meta({ example: 'sim_0f3c9a7e2b5d4e1f8a6c3b9d7e2f1a4c' }),
    status: z.enum(['running', 'completed']),
    input: simulationInput,
    months: z.array(simulationMonth).nullable().meta({ description: 'Month by month, once completed.' }),
    totals: simulationTotals.nullable().meta({ description: 'Once completed.' }),
    createdAt: z.string(),
    completedAt: z.string().nullable(),
  })
  .meta({ id: 'Simulation' });
export type SimulationView = z.infer<typeof simulationView>;

const cursorAt = sql.fragment`created_at::text AS cursor_at`;

/** One page, newest first, of an employer's rows of `table` (optionally of one status). */
async function listPage<Row extends { id: string; cursor_at: string }>(
  pool: CommonQueryMethods,
  rowSchema: z.ZodType<Row>,
  select: FragmentSqlToken,
  table: string,
  employerId: string,
  { limit, after, status }: { limit: number; after: Keyset | null; status?: string | undefined },
): Promise<{ rows: Row[]; next: Keyset | null }> {
  const rows = await pool.any(sql.type(rowSchema as z.ZodObject)`
    SELECT ${select}, ${cursorAt} FROM ${sql.identifier([table])}
    WHERE employer_id = ${employerId}
      ${status === undefined ? sql.fragment`` : sql.fragment`AND status = ${status}`}
      ${after ? sql.fragment`AND (created_at, id) < (${after.at}::timestamptz, ${after.id})` : sql.fragment``}
    ORDER BY created_at DESC, id DESC LIMIT ${limit + 1}`) as unknown as Row[];
  const { page, next } = pageOf(rows, limit, (row) => ({ at: row.cursor_at, id: row.id }));
  return { rows: page, next };
}

// --- authorizations

const authorizationRow = z.object({
  id: z.string(), patient_id: z.string(), treatment: z.string(), justification: z.string(), requested_at: z.string(),
  status: z.enum(AUTHORIZATION_STATUSES), decision_note: z.string().nullable(), reviewed_by: z.string().nullable(), reviewed_at: z.string().nullable(),
  created_at: z.string(), cursor_at: z.string(),
});
const authorizationColumns = sql.fragment`id, patient_id, treatment, justification, requested_at, status, decision_note, reviewed_by, reviewed_at, created_at`;

function toAuthorization(row: z.infer<typeof authorizationRow>): AuthorizationView {
  return {
    id: row.id,
    patientId: row.patient_id,
    treatment: row.treatment,
    justification: row.justification,
    requestedAt: row.requested_at,
    status: row.status,
    review: row.status === 'pending' ? null : { decision: row.status, note: row.decision_note, reviewedBy: row.reviewed_by!, reviewedAt: row.reviewed_at! },
    createdAt: row.created_at,
  };
}

export async function getAuthorization(pool: CommonQueryMethods, employerId: string, id: string): Promise<AuthorizationView> {
  const row = await pool.maybeOne(sql.type(authorizationRow)`
    SELECT ${authorizationColumns}, ${cursorAt} FROM authorizations WHERE employer_id = ${employerId} AND id = ${id}`);
  if (!row) throw notFound('Authorization request');
  return toAuthorization(row);
}

export async function listAuthorizations(pool: CommonQueryMethods, employerId: string, page: { limit: number; after: Keyset | null; status?: string | undefined }) {
  const { rows, next } = await listPage(pool, authorizationRow, authorizationColumns, 'authorizations', employerId, page);
  return { authorizations: rows.map(toAuthorization), next };
}

// --- tapering proposals

const taperingRow = z.object({
  id: z.string(), patient_id: z.string(), medication: z.string(), schedule: z.array(taperingStepView), status: z.enum(TAPERING_STATUSES),
  reason: z.string().nullable(), decided_at: z.string().nullable(), created_at: z.string(), cursor_at: z.string(),
});
const taperingColumns = sql.fragment`id, patient_id, medication, schedule, status, reason, decided_at, created_at`;

function toTapering(row: z.infer<typeof taperingRow>): TaperingProposalView {
  return {
    id: row.id, patientId: row.patient_id, medication: row.medication, schedule: row.schedule, status: row.status,
    reason: row.reason, decidedAt: row.decided_at, createdAt: row.created_at,
  };
}

export async function getTaperingProposal(pool: CommonQueryMethods, employerId: string, id: string): Promise<TaperingProposalView> {
  const row = await pool.maybeOne(sql.type(taperingRow)`
    SELECT ${taperingColumns}, ${cursorAt} FROM tapering_proposals WHERE employer_id = ${employerId} AND id = ${id}`);
  if (!row) throw notFound('Tapering proposal');
  return toTapering(row);
}

export async function listTaperingProposals(pool: CommonQueryMethods, employerId: string, page: { limit: number; after: Keyset | null; status?: string | undefined }) {
  const { rows, next } = await listPage(pool, taperingRow, taperingColumns, 'tapering_proposals', employerId, page);
  return { taperingProposals: rows.map(toTapering), next };
}

// --- invoices

const invoiceRow = z.object({
  id: z.string(), number: z.string(), amount_minor: z.number(), currency: z.string(), period_start: z.string(), period_end: z.string(),
  status: z.enum(['issued', 'paid']), paid_at: z.string().nullable(), created_at: z.string(), cursor_at: z.string(),
});
// amount_minor is bigint (read as BigInt by slonik); amounts are at most Number.MAX_SAFE_INTEGER, exact as float8.
const invoiceColumns = sql.fragment`id, number, amount_minor::float8 AS amount_minor, currency, period_start::text, period_end::text, status, paid_at, created_at`;

function toInvoice(row: z.infer<typeof invoiceRow>): InvoiceView {
  return {
    id: row.id, number: row.number, amountMinor: row.amount_minor, currency: row.currency,
    period: { start: row.period_start, end: row.period_end }, status: row.status, paidAt: row.paid_at, createdAt: row.created_at,
  };
}

export async function getInvoice(pool: CommonQueryMethods, employerId: string, id: string): Promise<InvoiceView> {
  const row = await pool.maybeOne(sql.type(invoiceRow)`SELECT ${invoiceColumns}, ${cursorAt} FROM invoices WHERE employer_id = ${employerId} AND id = ${id}`);
  if (!row) throw notFound('Invoice');
  return toInvoice(row);
}

export async function listInvoices(pool: CommonQueryMethods, employerId: string, page: { limit: number; after: Keyset | null; status?: string | undefined }) {
  const { rows, next } = await listPage(pool, invoiceRow, invoiceColumns, 'invoices', employerId, page);
  return { invoices: rows.map(toInvoice), next };
}

// --- simulations

const simulationRow = z.object({
  id: z.string(), status: z.enum(['running', 'completed']), input: simulationInput, months: z.array(simulationMonth).nullable(),
  totals: simulationTotals.nullable(), created_at: z.string(), completed_at: z.string().nullable(),
});

export async function getSimulation(pool: CommonQueryMethods, employerId: string, id: string): Promise<SimulationView> {
  const row = await pool.maybeOne(sql.type(simulationRow)`
    SELECT id, status, input, months, totals, created_at, completed_at FROM simulations WHERE employer_id = ${employerId} AND id = ${id}`);
  if (!row) throw notFound('Simulation');
  return { id: row.id, status: row.status, input: row.input, months: row.months, totals: row.totals, createdAt: row.created_at, completedAt: row.completed_at };
}

// --- platform tokens

/** The platform token with this SHA-256 hash (revoked or not), or null. */
export async function findPlatformToken(pool: CommonQueryMethods, tokenHash: string): Promise<{ id: string; families: PlatformFamily[]; revoked: boolean } | null> {
  const row = await pool.maybeOne(sql.type(z.object({ id: z.string(), families: z.array(z.enum(PLATFORM_FAMILIES)), revoked: z.boolean() }))`
    SELECT id, families, revoked_at IS NOT NULL AS revoked FROM platform_tokens WHERE token_hash = ${tokenHash}`);
  return row ?? null;
}
