// Commands of the platform workflows, all with the signature (ctx, context, input), the employer being
// context.tenantId. Those the platform issues check that the employer exists (404) and that the
// patient is one of its patients (400 UNKNOWN_PATIENT); ids are minted here, so each creation is a
// new stream.
import { randomUUID } from 'node:crypto';
import type { AppContext } from '../app-context.ts';
import { randomToken, sha256Hex } from '../crypto/tokens.ts';
import { employerOf, handleCommand, type CommandContext } from '../event-store/command-handler.ts';
import { DomainError } from '../event-store/decider.ts';
import { tenantStream } from '../event-store/port.ts';
import { readModelPatientDirectory, type PatientDirectory } from '../../projections/patients/queries.ts';
import { employerExists } from '../../projections/tenants/queries.ts';
import { authorizationDecider } from './authorization.ts';
import type { PlatformFamily, SimulationInput, TaperingStep } from './events.ts';
import { invoiceDecider } from './invoice.ts';
import { platformTokenDecider, platformTokenStream } from './platform-token.ts';
import { simulationDecider } from './simulation.ts';
import { taperingDecider } from './tapering.ts';
import { tooManyInFlight, withAdmission, type Admission } from '../worker/admission.ts';

const newId = (prefix: string) => `${prefix}_${randomUUID().replaceAll('-', '')}`;

export const authorizationStream = (employerId: string, id: string) => tenantStream(employerId, 'authorization', id);
export const taperingStream = (employerId: string, id: string) => tenantStream(employerId, 'tapering', id);
export const invoiceStream = (employerId: string, id: string) => tenantStream(employerId, 'invoice', id);
export const simulationStream = (employerId: string, id: string) => tenantStream(employerId, 'simulation', id);

/** The prefix every platform service token starts with, so leaked tokens are recognisable (secret scanners). */
export const PLATFORM_TOKEN_PREFIX = 'ptk_';

function patientDirectoryOf(ctx: AppContext): PatientDirectory {
  return readModelPatientDirectory(ctx.db.slonik);
}

async function assertEmployerAndPatient(ctx: AppContext, employerId: string, patientId: string) {
  if (!(await employerExists(ctx.db.slonik, employerId))) throw new DomainError('not_found', 'NOT_FOUND', 'Employer was not found.');
  if (!(await patientDirectoryOf(ctx).exists(employerId, patientId))) {
    throw new DomainError('invalid', 'UNKNOWN_PATIENT', 'The patient is not a patient of this employer.', { patientId });
  }
}

// --- platform tokens (operator CLI; system streams)

/** Returns the token in clear, once; only its hash is stored. */
export async function createPlatformToken(ctx: AppContext, context: CommandContext, input: { name: string; families: PlatformFamily[] }) {
  const tokenId = newId('ptok');
  const token = `${PLATFORM_TOKEN_PREFIX}${randomToken()}`;
  await handleCommand(ctx.commands, {
    streamName: platformTokenStream(tokenId),
    decider: platformTokenDecider,
    command: { type: 'CreatePlatformToken', tokenId, name: input.name, families: [...new Set(input.families)], tokenHash: sha256Hex(token) },
    context,
    newStream: true,
  });
  return { id: tokenId, token };
}

export async function revokePlatformToken(ctx: AppContext, context: CommandContext, input: { tokenId: string }) {
  await handleCommand(ctx.commands, { streamName: platformTokenStream(input.tokenId), decider: platformTokenDecider, command: { type: 'RevokePlatformToken' }, context });
}

// --- authorizations

export async function requestAuthorization(
  ctx: AppContext,
  context: CommandContext,
  input: { patientId: string; treatment: string; justification: string; requestedAt: string },
) {
  const employerId = employerOf(context);
  await assertEmployerAndPatient(ctx, employerId, input.patientId);
  const authorizationId = newId('auth');
  await handleCommand(ctx.commands, {
    streamName: authorizationStream(employerId, authorizationId),
    decider: authorizationDecider,
    command: { type: 'RequestAuthorization', authorizationId, ...input },
    context,
    newStream: true,
  });
  return { authorizationId };
}

export async function reviewAuthorization(ctx: AppContext, context: CommandContext, input: { authorizationId: string; decision: 'approved' | 'denied'; note: string | null }) {
  await handleCommand(ctx.commands, {
    streamName: authorizationStream(employerOf(context), input.authorizationId),
    decider: authorizationDecider,
    command: { type: 'ReviewAuthorization', decision: input.decision, note: input.note, reviewedBy: context.actor.id },
    context,
  });
}

// --- tapering proposals

export async function proposeTapering(ctx: AppContext, context: CommandContext, input: { patientId: string; medication: string; schedule: TaperingStep[] }) {
  const employerId = employerOf(context);
  await assertEmployerAndPatient(ctx, employerId, input.patientId);
  const proposalId = newId('tap');
  await handleCommand(ctx.commands, {
    streamName: taperingStream(employerId, proposalId),
    decider: taperingDecider,
    command: { type: 'ProposeTapering', proposalId, ...input },
    context,
    newStream: true,
  });
  return { proposalId };
}

export async function decideTapering(ctx: AppContext, context: CommandContext, input: { proposalId: string; decision: 'approved' | 'declined'; reason: string | null }) {
  await handleCommand(ctx.commands, {
    streamName: taperingStream(employerOf(context), input.proposalId),
    decider: taperingDecider,
    command: { type: 'DecideTapering', decision: input.decision, reason: input.reason },
    context,
  });
}

// --- invoices

export async function issueInvoice(
  ctx: AppContext,
  context: CommandContext,
  input: { number: string; amountMinor: number; currency: string; periodStart: string; periodEnd: string },
) {
  const employerId = employerOf(context);
  if (!(await employerExists(ctx.db.slonik, employerId))) throw new DomainError('not_found', 'NOT_FOUND', 'Employer was not found.');
  const invoiceId = newId('inv');
  await handleCommand(ctx.commands, {
    streamName: invoiceStream(employerId, invoiceId),
    decider: invoiceDecider,
    command: { type: 'IssueInvoice', invoiceId, ...input },
    context,
    newStream: true,
  });
  return { invoiceId };
}

export async function payInvoice(ctx: AppContext, context: CommandContext, input: { invoiceId: string; paidAt: string }) {
  await handleCommand(ctx.commands, {
    streamName: invoiceStream(employerOf(context), input.invoiceId),
    decider: invoiceDecider,
    command: { type: 'PayInvoice', paidAt: input.paidAt },
    context,
  });
}

// --- simulations

/**
 * Queued work of the employer: admitted under SIMULATION_MAX_IN_FLIGHT (429 TOO_MANY_SIMULATIONS_IN_FLIGHT
 * beyond), its ticket held until the simulation's job ends (src/worker/admission.ts).
 */
export async function requestSimulation(ctx: AppContext, context: CommandContext, input: SimulationInput) {
  const simulationId = newId('sim');
  const admission = simulationAdmission(employerOf(context), simulationId);
  const limit = ctx.config.SIMULATION_MAX_IN_FLIGHT;
  const refusal = () => tooManyInFlight('TOO_MANY_SIMULATIONS_IN_FLIGHT', 'Simulations queued or running', limit, SIMULATION_RETRY_AFTER_SECONDS);
  await withAdmission(ctx.db.slonik, admission, { limit, refusal }, () => handleCommand(ctx.commands, {
    streamName: simulationStream(employerOf(context), simulationId),
    decider: simulationDecider,
    command: { type: 'RequestSimulation', simulationId, ...input },
    context,
    newStream: true,
  }));
  return { simulationId };
}

const SIMULATION_RETRY_AFTER_SECONDS = 5;
export const simulationAdmission = (employerId: string, simulationId: string): Admission => ({ employerId, kind: 'simulation', workId: simulationId });

/** The worker's half: counts the members now and records the results (nothing when already completed). */
export async function completeSimulation(ctx: AppContext, context: CommandContext, input: { simulationId: string; cohortId: string | null }) {
  const employerId = employerOf(context);
  const members = await patientDirectoryOf(ctx).countActive(employerId, input.cohortId);
  await handleCommand(ctx.commands, {
    streamName: simulationStream(employerId, input.simulationId),
    decider: simulationDecider,
    command: { type: 'CompleteSimulation', members },
    context,
  });
}
