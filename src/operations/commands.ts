// Operators' commands on projections (cli projections skip): a parked event is moved out of the
// projection's way (projections/operations.ts), the skip recorded as ProjectionEventSkipped (its
// audit entry, in the employer's audit log and chain), then the events of its stream that waited
// behind it are applied again.
import type { AppContext } from '../app-context.ts';
import { handleCommand } from '../event-store/command-handler.ts';
import { DomainError } from '../event-store/decider.ts';
import { formatPosition, systemStream, tenantStream, type Position } from '../event-store/port.ts';
import type { Projection } from '../event-store/projection.ts';
import { recordOnceDecider } from '../event-store/record-once.ts';
import { moveParkedToSkipped, type SkippedEvent } from '../../projections/operations.ts';
import { retryParkedEvents } from '../../projections/runner.ts';

export async function skipParkedEvent(
  ctx: AppContext,
  input: { projection: Projection; position: Position; skippedBy: string; reason: string },
): Promise<{ skipped: SkippedEvent; released: { applied: number; stillParked: number } }> {
  const { projection, position, skippedBy, reason } = input;
  const skipped = await moveParkedToSkipped(ctx.db.slonik, { projection: projection.name, position, by: skippedBy, reason });
  if (!skipped) {
    throw new DomainError('not_found', 'NOT_PARKED', `No event of ${projection.name} failed and was parked at ${formatPosition(position)} (events waiting behind another are released by skipping or retrying that one).`);
  }
  const id = `${projection.name}.${skipped.event_id}`;
  await handleCommand(ctx.commands, {
    streamName: skipped.tenant_id ? tenantStream(skipped.tenant_id, 'projectionSkip', id) : systemStream('projectionSkip', id),
    decider: recordOnceDecider,
    command: {
      record: {
        type: 'ProjectionEventSkipped',
        data: { projection: projection.name, eventId: skipped.event_id, eventType: skipped.event_type, streamName: skipped.stream_name, position: formatPosition(position), error: skipped.error, skippedBy, reason },
      },
    },
    context: { tenantId: skipped.tenant_id, actor: { type: 'system', id: `operator:${skippedBy}`.slice(0, 100) } },
  });
  const released = await retryParkedEvents({ pool: ctx.db.slonik, eventStore: ctx.eventStore, projection, streamName: skipped.stream_name });
  return { skipped, released };
}
