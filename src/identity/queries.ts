import { sql } from 'slonik';
import { z } from 'zod';
import type { AppContext } from '../app-context.ts';
import { notFound } from '../http/errors.ts';

const row = z.object({ email: z.string(), expires_at: z.string() });

export async function findActiveSessionById(ctx: AppContext, employerId: string, sessionId: string) {
  const found = await ctx.db.slonik.maybeOne(sql.type(row)`
    SELECT u.email, s.expires_at FROM sessions s JOIN users u ON u.id = s.user_id
    WHERE s.employer_id = ${employerId} AND s.session_id = ${sessionId}`);
  if (!found) throw notFound('Session');
  return found;
}
