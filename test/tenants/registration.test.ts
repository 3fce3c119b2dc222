// Registering a user, changing a user's e-mail and deleting a user write the e-mail's reservation
// stream and the user's stream in one append: each happens whole or not at all, so no claim is ever
// left behind, nor one held by a deleted user.
import { createSecretKey, randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CommandContext } from '../../src/event-store/command-handler.ts';
import { DomainError } from '../../src/event-store/decider.ts';
import { createPostgresEventStore } from '../../src/event-store/postgres.ts';
import { changeUser, registerUser, type UserCommandDeps } from '../../src/tenants/commands.ts';
import { emailHash, emailReservationStream } from '../../src/tenants/email-reservation.ts';
import type { UserProfile } from '../../src/tenants/events.ts';
import { userStream } from '../../src/tenants/user.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { serviceEventRegistry } from '../support/event-registry.ts';

describe('user registration and e-mail changes', () => {
  let database: TestDatabase;
  let deps: UserCommandDeps;
  beforeAll(async () => {
    database = await createTestDatabase();
    deps = {
      eventStore: createPostgresEventStore(database.db.eventStore, database.notifications, serviceEventRegistry),
      waitForProjections: async () => true,
      personalData: { db: database.db.slonik, encryptionKey: createSecretKey(randomBytes(32)) },
    };
  });
  afterAll(async () => database?.cleanup());

  const employer = () => {
    const employerId = `emp_${randomUUID().replaceAll('-', '')}`;
    const context: CommandContext = { tenantId: employerId, actor: { type: 'system', id: 'registration-test' } };
    const profile = (email: string): UserProfile => ({ email, userName: email, givenName: null, familyName: null, displayName: null, externalId: null });
    const register = (email: string, userId?: string) =>
      registerUser(deps, context, { employerId, role: 'PATIENT', profile: profile(email), active: true, source: 'scim', ...(userId ? { userId } : {}) });
    return { employerId, context, profile, register };
  };
  const changeProfile = (context: CommandContext, employerId: string, userId: string, changes: Partial<UserProfile>) =>
    changeUser(deps, context, employerId, userId, (user) => ({ profile: { ...user.profile, ...changes }, active: true }));
  const reservation = (email: string) => deps.eventStore.readStream(emailReservationStream(emailHash(email)));
  const uniqueEmail = () => `${randomUUID()}@registration.test`;

  it('claims the e-mail and registers the user in the same transaction', async () => {
    const { employerId, register } = employer();
    const email = uniqueEmail();
    const { userId, position } = await register(email);
    const [claim] = await reservation(email);
    const [registered] = await deps.eventStore.readStream(userStream(employerId, userId));
    expect(claim).toMatchObject({ type: 'EmailReserved', data: { employerId, userId } });
    expect(registered).toMatchObject({ type: 'UserRegistered', data: { userId, personal: { sealed: expect.stringMatching(/^v1\./) } } });
    expect(claim!.position.commit).toBe(registered!.position.commit);
    expect(position).toEqual(registered!.position);
  });

  it('writes neither stream when the e-mail belongs to another employer', async () => {
    const email = uniqueEmail();
    await employer().register(email);
    const other = employer();
    const userId = randomUUID();
    await expect(other.register(email, userId)).rejects.toMatchObject({ code: 'EMAIL_UNAVAILABLE' });
    expect(await deps.eventStore.readStream(userStream(other.employerId, userId))).toEqual([]);
    expect(await reservation(email)).toHaveLength(1);
  });

  it('leaves no claim on the e-mail when the user cannot be registered', async () => {
    const { register } = employer();
    const { userId } = await register(uniqueEmail());
    const unclaimed = uniqueEmail();
    await expect(register(unclaimed, userId)).rejects.toBeInstanceOf(DomainError);
    expect(await reservation(unclaimed)).toEqual([]);
    // The address is still free for anyone.
    await expect(employer().register(unclaimed)).resolves.toMatchObject({ position: expect.anything() });
  });

  it('moves the claim with an e-mail change, and changes nothing when the new address is taken', async () => {
    const { employerId, context, register } = employer();
    const before = uniqueEmail();
    const { userId } = await register(before);
    const after = uniqueEmail();
    await changeProfile(context, employerId, userId, { email: after });
    expect((await reservation(before)).map((event) => event.type)).toEqual(['EmailReserved', 'EmailReleased']);
    expect((await reservation(after)).map((event) => event.type)).toEqual(['EmailReserved']);

    const taken = uniqueEmail();
    await employer().register(taken);
    const userEvents = (await deps.eventStore.readStream(userStream(employerId, userId))).length;
    await expect(changeProfile(context, employerId, userId, { email: taken })).rejects.toMatchObject({ code: 'EMAIL_UNAVAILABLE' });
    expect(await deps.eventStore.readStream(userStream(employerId, userId))).toHaveLength(userEvents);
    expect((await reservation(after)).map((event) => event.type)).toEqual(['EmailReserved']);
  });

  it("frees a deleted user's e-mail in the same write as the deletion, and refuses later changes to that user", async () => {
    const { employerId, context, register } = employer();
    const email = uniqueEmail();
    const { userId } = await register(email);
    const { position } = await changeUser(deps, context, employerId, userId, () => ({ delete: true }));
    const [deleted] = (await deps.eventStore.readStream(userStream(employerId, userId))).slice(-1);
    const [released] = (await reservation(email)).slice(-1);
    expect(deleted).toMatchObject({ type: 'UserDeactivated', data: { scimDeleted: true } });
    expect(released).toMatchObject({ type: 'EmailReleased', data: { userId } });
    expect(released!.position.commit).toBe(deleted!.position.commit);
    expect(position).not.toBeNull();
    await expect(changeProfile(context, employerId, userId, { givenName: 'Late' })).rejects.toMatchObject({ kind: 'not_found' });
    await expect(employer().register(email)).resolves.toMatchObject({ position: expect.anything() });
  });
});
