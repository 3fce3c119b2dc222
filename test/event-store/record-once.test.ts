// The record-once decider, with no database: the first run of a period records its event, every later
// run of that period (its stream holds the event) decides nothing.
import { describe, it } from 'vitest';
import type { DomainEvent } from '../../src/event-store/decider.ts';
import { recordOnceDecider } from '../../src/event-store/record-once.ts';
import { deciderSpec } from '../support/decider.ts';

const given = deciderSpec(recordOnceDecider);
const alert = (rejections: number): DomainEvent => ({ type: 'IntegrationAlertRaised', data: { hour: '2030-01-01T08', rejections } });

describe('record-once decider', () => {
  it('records the event into an empty stream', () => {
    given([]).when({ record: alert(12) }).then([alert(12)]);
  });

  it('records nothing once the stream holds an event, even a different finding of the same period', () => {
    given([alert(12)]).when({ record: alert(12) }).then([]);
    given([alert(12)]).when({ record: alert(30) }).then([]);
  });
});
