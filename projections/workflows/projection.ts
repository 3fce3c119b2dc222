// Read model `workflows`: platform tokens (what authentication looks up by hash) and the employer's
// authorization requests, tapering proposals, invoices and simulations (what the routes list and read).
import { sql } from 'slonik';
import { WORKFLOW_EVENT_NAMES, type WorkflowEvent } from '../../src/workflows/events.ts';
import { defineProjection } from '../../src/event-store/projection.ts';

export const workflowsProjection = defineProjection<WorkflowEvent>({
  name: 'workflows',
  tables: ['platform_tokens', 'authorizations', 'tapering_proposals', 'invoices', 'simulations'],
  eventTypes: WORKFLOW_EVENT_NAMES,
  awaitedByCommands: true,
  async apply(tx, events) {
    for (const event of events) {
      const at = event.metadata.occurredAt;
      const employerId = event.metadata.tenantId!;
      switch (event.type) {
        case 'PlatformTokenCreated': {
          const d = event.data;
          await tx.query(sql.unsafe`
            INSERT INTO platform_tokens (id, name, families, token_hash, created_at)
            VALUES (${d.tokenId}, ${d.name}, ${sql.array(d.families, 'text')}, ${d.tokenHash}, ${at})`);
          break;
        }
        case 'PlatformTokenRevoked':
          await tx.query(sql.unsafe`UPDATE platform_tokens SET revoked_at = ${at} WHERE id = ${event.data.tokenId}`);
          break;
        case 'AuthorizationRequested': {
          const d = event.data;
          await tx.query(sql.unsafe`
            INSERT INTO authorizations (employer_id, id, patient_id, treatment, justification, requested_at, status, created_at)
            VALUES (${employerId}, ${d.authorizationId}, ${d.patientId}, ${d.treatment}, ${d.justification}, ${d.requestedAt}, 'pending', ${at})`);
          break;
        }
        case 'AuthorizationReviewed': {
          const d = event.data;
          await tx.query(sql.unsafe`
            UPDATE authorizations SET status = ${d.decision}, decision_note = ${d.note}, reviewed_by = ${d.reviewedBy}, reviewed_at = ${at}
            WHERE employer_id = ${employerId} AND id = ${d.authorizationId}`);
          break;
        }
        case 'TaperingProposed': {
          const d = event.data;
          await tx.query(sql.unsafe`
            INSERT INTO tapering_proposals (employer_id, id, patient_id, medication, schedule, status, created_at)
            VALUES (${employerId}, ${d.proposalId}, ${d.patientId}, ${d.medication}, ${sql.jsonb(d.schedule)}, 'proposed', ${at})`);
          break;
        }
        case 'TaperingApproved':
        case 'TaperingDeclined': {
          const d = event.data;
          const status = event.type === 'TaperingApproved' ? 'approved' : 'declined';
          await tx.query(sql.unsafe`
            UPDATE tapering_proposals SET status = ${status}, reason = ${d.reason}, decided_at = ${at}
            WHERE employer_id = ${employerId} AND id = ${d.proposalId}`);
          break;
        }
        case 'InvoiceIssued': {
          const d = event.data;
          await tx.query(sql.unsafe`
            INSERT INTO invoices (employer_id, id, number, amount_minor, currency, period_start, period_end, status, created_at)
            VALUES (${employerId}, ${d.invoiceId}, ${d.number}, ${d.amountMinor}, ${d.currency}, ${d.periodStart}, ${d.periodEnd}, 'issued', ${at})`);
          break;
        }
        case 'InvoicePaid':
          await tx.query(sql.unsafe`
            UPDATE invoices SET status = 'paid', paid_at = ${event.data.paidAt} WHERE employer_id = ${employerId} AND id = ${event.data.invoiceId}`);
          break;
        case 'SimulationRequested': {
          const { simulationId, ...input } = event.data;
          await tx.query(sql.unsafe`
            INSERT INTO simulations (employer_id, id, status, input, created_at) VALUES (${employerId}, ${simulationId}, 'running', ${sql.jsonb(input)}, ${at})`);
          break;
        }
        case 'SimulationCompleted': {
          const d = event.data;
          await tx.query(sql.unsafe`
            UPDATE simulations SET status = 'completed', months = ${sql.jsonb(d.months)}, totals = ${sql.jsonb(d.totals)}, completed_at = ${at}
            WHERE employer_id = ${employerId} AND id = ${d.simulationId}`);
          break;
        }
      }
    }
  },
});
