// Commands of patients and their FHIR resources: cohort upload, FHIR create, update and delete (each
// planned first, so a transaction appends several in one write), erasure.
// Personal content is sealed under the patient's data key before it reaches a decider, so no event
// is ever written with it in clear.
import { randomUUID, type KeyObject } from 'node:crypto';
import canonicalize from 'canonicalize';
import type { AppContext } from '../app-context.ts';
import { createDataKeys, dataKey, dataKeys, destroyDataKey, emailBlindIndex, PersonalDataErasedError, sealPersonal } from '../crypto/personal-data.ts';
import { DomainError, fold } from '../event-store/decider.ts';
import { employerOf, handleCommands, handlePlannedCommands, type CommandContext, type CommandPlan, type StreamCommand } from '../event-store/command-handler.ts';
import { tenantStream } from '../event-store/port.ts';
import { admitAddressCommands } from '../email-domains/domain-reservation.ts';
import { addressesInOthersDomains } from '../email-domains/commands.ts';
import { EMAIL_UNAVAILABLE_MESSAGE, emailUnavailable } from '../tenants/email-reservation.ts';
import { patientsByEmailIndex } from '../../projections/fhir-resources/queries.ts';
import { patientEmails } from '../../projections/fhir-resources/search-parameters.ts';
import { clinicalResourceDecider } from './clinical-resource.ts';
import { cohortDecider } from './cohort.ts';
import { patientFromRow, type CohortRow } from './cohort-row.ts';
import { emailClaimDecider, type EmailClaimState } from './email-claim.ts';
import { contentOf, sealContext, type ClinicalResourceType, type FhirJson, type FhirResourceType } from './events.ts';
import { fhirError } from './fhir/outcome.ts';
import { gone, patientDecider, type PatientState } from './patient.ts';

export const patientStream = (employerId: string, patientId: string) => tenantStream(employerId, 'patient', patientId);
const emailClaimStream = (employerId: string, emailIndex: string) => tenantStream(employerId, 'patientEmail', emailIndex);
export const resourceStream = (employerId: string, type: ClinicalResourceType, id: string) => tenantStream(employerId, type[0]!.toLowerCase() + type.slice(1), id);
const cohortStream = (employerId: string, cohortId: string) => tenantStream(employerId, 'cohort', cohortId);

export type CohortResult = { cohortId: string; received: number; created: number; updated: number; unchanged: number };

/**
 * Registers new patients and updates changed ones, all in one append (all rows or none) together with
 * the `CohortUploaded` event. Patients are found by the blind index of their e-mail in the read model,
 * which may lag: the plan holds only while each updated patient is at the version the read model
 * showed and each new e-mail is claimed by nobody (else its patient exists already); when it does not,
 * it is made again (handlePlannedCommands). `readable`: whether the read models it waited for caught
 * up in time (PROJECTION_WAIT_TIMEOUT_MS); the upload is written either way.
 */
export async function uploadCohort(ctx: AppContext, context: CommandContext, input: { rows: CohortRow[] }): Promise<{ result: CohortResult; readable: boolean }> {
  const employerId = employerOf(context);
  const cohortId = randomUUID();
  const indexes = input.rows.map((row) => emailBlindIndex(ctx.encryptionKey, employerId, row.email));
  const newIds = input.rows.map(() => randomUUID());
  // Data keys of new patients, kept across plans (a key is created once per id).
  const newKeys = new Map<string, KeyObject>();
  const { result, readable } = await handlePlannedCommands(ctx.commands, async (): Promise<CommandPlan<CohortResult>> => {
    const existing = await patientsByEmailIndex(ctx.db.slonik, employerId, indexes);
    const created: { index: number; patient: FhirJson }[] = [];
    const updated: { index: number; patient: FhirJson; id: string; version: number }[] = [];
    input.rows.forEach((row, index) => {
      const current = existing.get(indexes[index]!);
      if (!current) return void created.push({ index, patient: patientFromRow(row) });
      const patient = patientFromRow(row, current.resource as FhirJson);
      if (canonicalize(contentOf(patient)) !== canonicalize(contentOf(current.resource as FhirJson))) updated.push({ index, patient, id: current.id, version: current.version_id });
    });
    const result = { cohortId, received: input.rows.length, created: created.length, updated: updated.length, unchanged: input.rows.length - created.length - updated.length };
    const refused = await addressesInOthersDomains(ctx, employerId, created.map(({ index }) => input.rows[index]!.email));
    if (refused.length > 0) {
      const rows = refused.map((position) => created[position]!.index);
      throw emailUnavailable({ errors: rows.map((index) => ({ index, field: 'email', path: `body.patients.${index}.email`, message: EMAIL_UNAVAILABLE_MESSAGE })) });
    }

    const keyless = created.map(({ index }) => newIds[index]!).filter((id) => !newKeys.has(id));
    for (const [id, key] of await createDataKeys(ctx.db.slonik, ctx.encryptionKey, employerId, keyless)) newKeys.set(id, key);
    const updatedKeys = await dataKeys(ctx.db.slonik, ctx.encryptionKey, employerId, updated.map(({ id }) => id));
    const seal = (patient: FhirJson, id: string, key: KeyObject) => sealPersonal(contentOf(patient), key, sealContext(employerId, 'Patient', id));
    const commands: StreamCommand<any, any, any>[] = [
      ...created.flatMap(({ index, patient }) => {
        const patientId = newIds[index]!;
        const emailIndex = indexes[index]!;
        return [
          { streamName: patientStream(employerId, patientId), decider: patientDecider, context, newStream: true,
            command: { type: 'RegisterPatient', patientId, emailIndex, sealed: seal(patient, patientId, newKeys.get(patientId)!), cohortId } },
          // A claim stream may exist, released by an erasure; one held is a patient the read model does not show yet.
          { ...claimCommand(employerId, emailIndex, patientId, context), newStream: true, asPlanned: (state: EmailClaimState) => state.holder === null },
        ];
      }),
      ...updated.map(({ index, patient, id, version }) => {
        const key = updatedKeys.get(id);
        if (!key) throw gone();
        // The version the row was compared with, as the read model shows it (one stream read less per row).
        const readAs: { revision: bigint; state: PatientState } = { revision: BigInt(version - 1), state: { status: 'active', emailIndex: indexes[index]!, version } };
        return { streamName: patientStream(employerId, id), decider: patientDecider, context, readAs,
          command: { type: 'UpdatePatient', patientId: id, emailIndex: indexes[index]!, sealed: seal(patient, id, key), cohortId } };
      }),
      { streamName: cohortStream(employerId, cohortId), decider: cohortDecider, context, newStream: true, command: { type: 'RecordUpload', ...result } },
    ];
    return { commands, result };
  });
  return { result, readable };
}

/** The one e-mail a Patient may carry (its identity in the employer), or null. */
function emailOf(patient: FhirJson): string | null {
  const emails = [...new Set(patientEmails(patient).map((email) => email.trim().toLowerCase()))];
  if (emails.length > 1) throw fhirError('invalid', 'A Patient carries at most one e-mail address (telecom with system email).');
  return emails[0] ?? null;
}

/**
 * The patient a clinical resource belongs to: its subject, `Patient/<id>`, a live patient of the employer
 * or one a transaction creates before it (`planned`, with its data key).
 */
async function subjectPatient(ctx: AppContext, employerId: string, resource: FhirJson, planned: PlannedPatients): Promise<{ patientId: string; key: KeyObject }> {
  const reference = resource.subject?.reference;
  const match = typeof reference === 'string' ? /^(?:.*\/)?Patient\/([A-Za-z0-9.-]{1,64})$/.exec(reference) : null;
  if (!match) throw fhirError('invalid', 'subject must reference a Patient of this employer: Patient/<id>.');
  const patientId = match[1]!;
  const plannedKey = planned.get(patientId);
  if (plannedKey) return { patientId, key: plannedKey };
  const state = fold(patientDecider, (await ctx.eventStore.readStream(patientStream(employerId, patientId))) as never);
  if (state.status !== 'active') throw fhirError('invalid', `subject ${reference} is not a patient of this employer.`);
  return { patientId, key: await dataKey(ctx.db.slonik, ctx.encryptionKey, employerId, patientId) };
}

/** A patient erased meanwhile has no data key to seal under any more: the resource is `gone`. */
async function goneOnceErased<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof PersonalDataErasedError) throw gone();
    throw error;
  }
}

/** The version a create, update or delete wrote: the resource is served as withMeta(type, id, versionId, lastUpdated, content). */
export type WrittenVersion = { id: string; versionId: number; lastUpdated: string };

/** Patients a transaction creates, by id, with their new data keys: its later entries may reference them. */
export type PlannedPatients = Map<string, KeyObject>;

/**
 * A FHIR write as commands on streams, not yet appended: appended alone (createFhirResource, ...) or
 * with the other entries of a transaction (fhir/bundle.ts). The resource's own stream comes first.
 */
export type PlannedWrite = { id: string; commands: StreamCommand<any, any, any>[] };

/** The version the planned write's first command (its resource's stream) wrote. */
export function writtenVersion(plan: PlannedWrite, outcome: { results: readonly { state: unknown }[]; occurredAt: string }, firstCommand = 0): WrittenVersion {
  return { id: plan.id, versionId: (outcome.results[firstCommand]!.state as { version: number }).version, lastUpdated: outcome.occurredAt };
}

type CreateInput = { resourceType: FhirResourceType; resource: FhirJson };
type UpdateInput = { resourceType: FhirResourceType; id: string; resource: FhirJson; expectedVersion?: number };

/** Plans a create with the id `id` (the server's). A Patient's data key is created here, and added to `planned`. */
export async function planCreate(ctx: AppContext, context: CommandContext, input: CreateInput & { id: string }, planned: PlannedPatients = new Map()): Promise<PlannedWrite> {
  const employerId = employerOf(context);
  const { id } = input;
  const content = contentOf(input.resource);
  if (input.resourceType === 'Patient') {
    const email = emailOf(input.resource);
    const key = (await createDataKeys(ctx.db.slonik, ctx.encryptionKey, employerId, [id])).get(id)!;
    planned.set(id, key);
    const emailIndex = email === null ? null : emailBlindIndex(ctx.encryptionKey, employerId, email);
    const sealed = sealPersonal(content, key, sealContext(employerId, 'Patient', id));
    return { id, commands: [
      { streamName: patientStream(employerId, id), decider: patientDecider, command: { type: 'RegisterPatient', patientId: id, emailIndex, sealed, cohortId: null }, context, newStream: true },
      ...(emailIndex === null ? [] : [claimCommand(employerId, emailIndex, id, context)]),
      ...admitAddressCommands(context, email, employerId),
    ] };
  }
  const { patientId, key } = await subjectPatient(ctx, employerId, input.resource, planned);
  const sealed = sealPersonal(content, key, sealContext(employerId, input.resourceType, id));
  return { id, commands: [
    { streamName: resourceStream(employerId, input.resourceType, id), decider: clinicalResourceDecider, context, newStream: true,
      command: { type: 'CreateResource', resourceType: input.resourceType, resourceId: id, patientId, sealed } },
  ] };
}

export async function planUpdate(ctx: AppContext, context: CommandContext, input: UpdateInput, planned: PlannedPatients = new Map()): Promise<PlannedWrite> {
  const employerId = employerOf(context);
  const { id, expectedVersion } = input;
  const content = contentOf(input.resource);
  const ifMatch = expectedVersion === undefined ? {} : { expectedVersion };
  if (input.resourceType === 'Patient') {
    const stream = patientStream(employerId, id);
    const current = fold(patientDecider, (await ctx.eventStore.readStream(stream)) as never);
    if (current.status === 'absent') throw fhirError('not_found', `Patient/${id} was not found.`);
    if (current.status === 'erased') throw gone();
    const email = emailOf(input.resource);
    const emailIndex = email === null ? null : emailBlindIndex(ctx.encryptionKey, employerId, email);
    const key = await dataKey(ctx.db.slonik, ctx.encryptionKey, employerId, id);
    const sealed = sealPersonal(content, key, sealContext(employerId, 'Patient', id));
    const emailChanged = emailIndex !== current.emailIndex;
    return { id, commands: [
      { streamName: stream, decider: patientDecider, context, command: { type: 'UpdatePatient', patientId: id, emailIndex, sealed, cohortId: null, ...ifMatch } },
      ...(emailChanged && emailIndex !== null ? [claimCommand(employerId, emailIndex, id, context)] : []),
      ...(emailChanged ? admitAddressCommands(context, email, employerId) : []),
      ...(emailChanged && current.emailIndex !== null ? [releaseCommand(employerId, current.emailIndex, id, context)] : []),
    ] };
  }
  const { patientId, key } = await subjectPatient(ctx, employerId, input.resource, planned);
  const sealed = sealPersonal(content, key, sealContext(employerId, input.resourceType, id));
  return { id, commands: [
    { streamName: resourceStream(employerId, input.resourceType, id), decider: clinicalResourceDecider, context,
      command: { type: 'UpdateResource', resourceType: input.resourceType, resourceId: id, patientId, sealed, ...ifMatch } },
  ] };
}

/** Plans the delete of a clinical resource (a Patient is erased instead: erasePatient). */
export function planDelete(context: CommandContext, input: { resourceType: ClinicalResourceType; id: string; expectedVersion?: number }): PlannedWrite {
  const { resourceType, id, expectedVersion } = input;
  return { id, commands: [
    { streamName: resourceStream(employerOf(context), resourceType, id), decider: clinicalResourceDecider, context,
      command: { type: 'DeleteResource', resourceType, resourceId: id, ...(expectedVersion === undefined ? {} : { expectedVersion }) } },
  ] };
}

/** Appends one planned write on its own. */
async function writeAlone(ctx: AppContext, plan: PlannedWrite): Promise<WrittenVersion> {
  return writtenVersion(plan, await handleCommands(ctx.commands, plan.commands));
}

/**
 * The writes of a FHIR transaction in one append: all or none. `plan` plans them (it may open data keys,
 * so an erasure meanwhile is `gone`); the versions written come back in the plans' order. Commands that
 * are the same on the same stream (two addresses' admission to one domain) are decided once; two
 * different writes of one stream cannot share an append: two entries of one resource are 400, two new
 * patients with one e-mail 409, as for one patient whose e-mail is taken.
 */
export async function writeTogether(ctx: AppContext, plan: () => Promise<PlannedWrite[]>): Promise<WrittenVersion[]> {
  return goneOnceErased(async () => {
    const plans = await plan();
    const commands: StreamCommand<any, any, any>[] = [];
    const seen = new Map<string, string>();
    const firstCommands = plans.map((planned) => {
      const first = commands.length;
      for (const [index, command] of planned.commands.entries()) {
        const same = seen.get(command.streamName);
        const fingerprint = JSON.stringify(command.command);
        // A plan's first command is its resource's: never shared.
        if (same === fingerprint && index > 0) continue;
        if (same !== undefined) throw command.command.type === 'ClaimEmail' ? emailUnavailable() : fhirError('invalid', `Two entries of the transaction write ${command.streamName.replace(/^[^.]*\./, '')}.`);
        seen.set(command.streamName, fingerprint);
        commands.push(command);
      }
      return first;
    });
    const outcome = await handleCommands(ctx.commands, commands);
    return plans.map((planned, index) => writtenVersion(planned, outcome, firstCommands[index]));
  });
}

export async function createFhirResource(ctx: AppContext, context: CommandContext, input: CreateInput): Promise<WrittenVersion> {
  return goneOnceErased(async () => writeAlone(ctx, await planCreate(ctx, context, { ...input, id: randomUUID() })));
}

export async function updateFhirResource(ctx: AppContext, context: CommandContext, input: UpdateInput): Promise<WrittenVersion> {
  return goneOnceErased(async () => writeAlone(ctx, await planUpdate(ctx, context, input)));
}

/** Deletes a clinical resource: its deletion is a version of its own; deleting a deleted one writes nothing. */
export async function deleteFhirResource(ctx: AppContext, context: CommandContext, input: { resourceType: ClinicalResourceType; id: string; expectedVersion?: number }): Promise<WrittenVersion> {
  return writeAlone(ctx, planDelete(context, input));
}

const claimCommand = (employerId: string, emailIndex: string, patientId: string, context: CommandContext): StreamCommand<any, any, any> => ({
  streamName: emailClaimStream(employerId, emailIndex), decider: emailClaimDecider, command: { type: 'ClaimEmail', emailIndex, patientId }, context,
});
const releaseCommand = (employerId: string, emailIndex: string, patientId: string, context: CommandContext): StreamCommand<any, any, any> => ({
  streamName: emailClaimStream(employerId, emailIndex), decider: emailClaimDecider, command: { type: 'ReleaseEmail', emailIndex, patientId }, context,
});

/**
 * Erases a patient's personal data: destroys the data key first (from then on nothing sealed under
 * it opens, whatever happens next), then appends `PatientErased` and releases the e-mail claim in one
 * write. Erasing again changes nothing and answers the same.
 */
export async function erasePatient(ctx: AppContext, context: CommandContext, input: { patientId: string }): Promise<{ patientId: string; erasedAt: string }> {
  const employerId = employerOf(context);
  const stream = patientStream(employerId, input.patientId);
  const current = fold(patientDecider, (await ctx.eventStore.readStream(stream)) as never);
  if (current.status === 'absent') throw new DomainError('not_found', 'NOT_FOUND', `Patient ${input.patientId} was not found.`);
  const erasedAt = await destroyDataKey(ctx.db.slonik, employerId, input.patientId);
  await handleCommands(ctx.commands, [
    { streamName: stream, decider: patientDecider, command: { type: 'ErasePatient', patientId: input.patientId, erasedAt }, context },
    ...(current.emailIndex === null ? [] : [releaseCommand(employerId, current.emailIndex, input.patientId, context)]),
  ]);
  return { patientId: input.patientId, erasedAt };
}
