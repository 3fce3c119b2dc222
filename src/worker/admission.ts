// Admission of the queued work an employer asks for: at most a limit of each kind in flight per
// employer, so no employer's backlog grows without bound. Work that has a row of its own (an export,
// a pending delivery) is counted from that row; work with none yet holds an admission ticket
// (`work_admissions`, migrations/0030_work_admissions.sql) from its request until its row exists or its
// job ends. Counting and taking the ticket happen under a lock of the employer and kind, so parallel
// requests cannot pass the limit together; a refusal changes nothing.
import { sql, type CommonQueryMethods, type DatabasePool, type FragmentSqlToken, type ValueExpression } from 'slonik';
import { z } from 'zod';
import { DomainError } from '../event-store/decider.ts';

/** A ticket whose work never got going (the process died between admission and command) stops counting after this. */
const ADMISSION_TTL_SECONDS = 15 * 60;

export type Admission = { employerId: string; kind: string; workId: string };

/** The lock that makes "count, then admit" one step for an employer and kind (the caller's transaction). */
export function lockAdmissions(tx: CommonQueryMethods, employerId: string, kind: string) {
  return tx.query(sql.unsafe`SELECT pg_advisory_xact_lock(hashtext(${`admission:${kind}:${employerId}`}))`);
}

/**
 * Takes a ticket for `admission` if the employer has fewer than `limit` of its kind in flight: its
 * live tickets, plus what `handedOver` counts (a query of one integer: the kind's work in flight
 * that already has its own row). False, and nothing written, otherwise.
 */
export async function admit(pool: DatabasePool, admission: Admission, options: { limit: number; handedOver?: FragmentSqlToken }): Promise<boolean> {
  const { employerId, kind, workId } = admission;
  return pool.transaction(async (tx) => {
    await lockAdmissions(tx, employerId, kind);
    await tx.query(sql.unsafe`
      DELETE FROM work_admissions
      WHERE employer_id = ${employerId} AND kind = ${kind} AND admitted_at < now() - make_interval(secs => ${ADMISSION_TTL_SECONDS})`);
    const inFlight = await tx.oneFirst(sql.type(z.object({ count: z.number() }))`
      SELECT ((SELECT count(*) FROM work_admissions WHERE employer_id = ${employerId} AND kind = ${kind})
        + ${options.handedOver ? sql.fragment`(${options.handedOver})` : sql.fragment`0`})::int AS count`);
    if (inFlight >= options.limit) return false;
    await tx.query(sql.unsafe`INSERT INTO work_admissions (employer_id, kind, work_id) VALUES (${employerId}, ${kind}, ${workId})`);
    return true;
  });
}

/** Gives a ticket back by its id: its work ended (the tickets of a kind whose work never hands over). */
export async function release(pool: CommonQueryMethods, admission: Admission): Promise<void> {
  await pool.query(sql.unsafe`
    DELETE FROM work_admissions WHERE employer_id = ${admission.employerId} AND kind = ${admission.kind} AND work_id = ${admission.workId}`);
}

/**
 * Gives back the ticket of a request that failed after its admission. Tickets of a kind whose work
 * hands over are interchangeable (see handOverOldestTickets): when another's hand-over took this
 * one already, the oldest of the kind goes instead, so each request leaves none behind.
 */
export async function withdraw(pool: CommonQueryMethods, admission: Admission): Promise<void> {
  await pool.query(sql.unsafe`
    WITH own AS (
      DELETE FROM work_admissions WHERE employer_id = ${admission.employerId} AND kind = ${admission.kind} AND work_id = ${admission.workId} RETURNING 1
    )
    ${handOverOldestTickets(admission.employerId, admission.kind, sql.fragment`1 - (SELECT count(*) FROM own)`)}`);
}

/**
 * SQL for the statement that gives admitted work its own row: deletes `count` tickets of the
 * employer and kind, the oldest first. `count` is what the statement created (a replayed job creates
 * nothing, and so takes over no ticket).
 */
export function handOverOldestTickets(employerId: ValueExpression, kind: string, count: FragmentSqlToken) {
  return sql.fragment`DELETE FROM work_admissions WHERE (employer_id, kind, work_id) IN (
    SELECT employer_id, kind, work_id FROM work_admissions WHERE employer_id = ${employerId} AND kind = ${kind} ORDER BY admitted_at, work_id LIMIT ${count})`;
}

/**
 * Runs `work` (the command that queues the work) under an admission ticket, refused with `refusal`
 * when the employer's limit is reached. A `work` that fails gives its ticket back: by its id
 * (release), or, for a kind whose work hands over (`handedOver`), by withdraw.
 */
export async function withAdmission<T>(
  pool: DatabasePool,
  admission: Admission,
  options: { limit: number; handedOver?: FragmentSqlToken; refusal: () => DomainError },
  work: () => Promise<T>,
): Promise<T> {
  if (!(await admit(pool, admission, options))) throw options.refusal();
  try {
    return await work();
  } catch (error) {
    await (options.handedOver ? withdraw : release)(pool, admission);
    throw error;
  }
}

/** The refusal: 429 with `code`, the limit, and Retry-After. */
export function tooManyInFlight(code: string, what: string, limit: number, retryAfterSeconds: number): DomainError {
  return new DomainError('too_many', code, `${what}: at most ${limit} at a time per employer. Retry when one has finished (Retry-After is a hint).`, { limit, retryAfterSeconds });
}
