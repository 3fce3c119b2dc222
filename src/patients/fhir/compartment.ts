// What a caller may see of FHIR: API keys and admin sessions see the employer's resources; a PATIENT
// session sees only its own compartment, the Patient whose e-mail is its user's (whatever created
// the user: SCIM, SAML, the CLI) and the resources that belong to that Patient.
import { sql } from 'slonik';
import type { AppContext } from '../../app-context.ts';
import type { Principal } from '../../auth/principal.ts';
import { emailBlindIndex } from '../../crypto/personal-data.ts';
import { livePatientWithEmail } from '../../../projections/fhir-resources/queries.ts';
import { userEmailOf } from '../../../projections/tenants/queries.ts';

/** undefined: not restricted; otherwise the one Patient id the caller may see (null: none). */
export type Compartment = string | null | undefined;

export async function compartmentOf(ctx: AppContext, principal: Principal): Promise<Compartment> {
  if (principal.kind !== 'session' || principal.role !== 'PATIENT') return undefined;
  const email = await userEmailOf(ctx.db.slonik, principal.employerId, principal.userId);
  if (email === null) return null;
  return livePatientWithEmail(ctx.db.slonik, principal.employerId, emailBlindIndex(ctx.encryptionKey, principal.employerId, email));
}

/** The search condition of a compartment (none when unrestricted). */
export function compartmentCondition(compartment: Compartment) {
  if (compartment === undefined) return [];
  return [compartment === null ? sql.fragment`false` : sql.fragment`r.patient_id = ${compartment}`];
}
