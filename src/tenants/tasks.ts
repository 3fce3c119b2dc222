// The tenants capability's graphile-worker tasks, one job per event (the job dispatcher enqueues it
// once the event is committed):
// - admin-role-from-groups: members added to a group the employer maps to the administrator role
//   become administrators; members removed (or the group deleted) stop being, unless another mapped
//   group still holds them; a new mapping makes the members of its groups administrators, and a
//   reactivated member of a mapped group is one again (deactivation took the role).
// - admin-removal-refused-mail: e-mails the administrators that the IdP would have removed the last one.
import type { Task, TaskList } from 'graphile-worker';
import type { AppContext } from '../app-context.ts';
import type { CommandContext } from '../event-store/command-handler.ts';
import type { RecordedEvent } from '../event-store/port.ts';
import { eventOfJob, type EventConsumer, type EventJobPayload } from '../worker/dispatcher.ts';
import { groupDecider } from '../scim/group.ts';
import type { GroupEvent } from '../scim/events.ts';
import { fold } from '../event-store/decider.ts';
import { isMemberOfNamedGroups, membersOfNamedGroups } from '../../projections/scim-groups/queries.ts';
import { adminEmailsOf, userEmailOf } from '../../projections/tenants/queries.ts';
import { changeAdminRole, currentAdminRoleMapping } from './admin-role.ts';
import type { AdminRoleMapping, AdminRoleMappingSet, AdministratorRemovalRefused, UserReactivated } from './events.ts';

export const ADMIN_ROLE_TASK = 'admin-role-from-groups';
export const ADMIN_REMOVAL_REFUSED_MAIL_TASK = 'admin-removal-refused-mail';

export const tenantConsumers: EventConsumer[] = [
  { name: ADMIN_ROLE_TASK, eventTypes: ['GroupMembersAdded', 'GroupMembersRemoved', 'GroupDeleted', 'AdminRoleMappingSet', 'UserReactivated'], task: ADMIN_ROLE_TASK },
  { name: ADMIN_REMOVAL_REFUSED_MAIL_TASK, eventTypes: ['AdministratorRemovalRefused'], task: ADMIN_REMOVAL_REFUSED_MAIL_TASK },
];

export function tenantTasks(ctx: AppContext): TaskList {
  return { [ADMIN_ROLE_TASK]: adminRoleTask(ctx), [ADMIN_REMOVAL_REFUSED_MAIL_TASK]: removalRefusedMailTask(ctx) };
}

async function jobEvent(ctx: AppContext, payload: unknown): Promise<{ event: RecordedEvent; employerId: string }> {
  const job = payload as EventJobPayload;
  const event = await eventOfJob(ctx.eventStore, job);
  if (!event || !job.tenantId) throw new Error(`event ${job.eventId} of ${job.streamName} not found`);
  return { event, employerId: job.tenantId };
}

function adminRoleTask(ctx: AppContext): Task {
  return async (payload) => {
    const { event, employerId } = await jobEvent(ctx, payload);
    const context: CommandContext = { tenantId: employerId, actor: { type: 'system', id: ADMIN_ROLE_TASK }, correlationId: event.metadata.correlationId, causationId: event.eventId };
    const mapping = await currentAdminRoleMapping(ctx, employerId);
    if (mapping.scimGroups.length === 0) return;
    const change = (userId: string, admin: boolean) => changeAdminRole(ctx, context, { userId, admin, via: 'scim_group' });
    if (event.type === 'AdminRoleMappingSet') {
      const { mapping: set } = (event as RecordedEvent<AdminRoleMappingSet>).data;
      for (const userId of await membersOfNamedGroups(ctx.db.slonik, employerId, set.scimGroups)) await change(userId, true);
      return;
    }
    if (event.type === 'UserReactivated') {
      const { userId } = (event as RecordedEvent<UserReactivated>).data;
      if (await isMemberOfNamedGroups(ctx.db.slonik, employerId, userId, mapping.scimGroups, null)) await change(userId, true);
      return;
    }
    // The group as it was just before this event: its name then, and its members for a deletion.
    const history = (await ctx.eventStore.readStream(event.streamName)) as unknown as RecordedEvent<GroupEvent>[];
    const before = fold(groupDecider, history.slice(0, history.findIndex((recorded) => recorded.eventId === event.eventId)));
    if (before.status !== 'present' || !namesGroup(mapping, before.groupId, before.displayName)) return;
    const groupEvent = event as RecordedEvent<GroupEvent>;
    if (groupEvent.type === 'GroupMembersAdded') {
      for (const userId of groupEvent.data.userIds) await change(userId, true);
      return;
    }
    const leaving = groupEvent.type === 'GroupMembersRemoved' ? groupEvent.data.userIds : groupEvent.type === 'GroupDeleted' ? before.members : [];
    for (const userId of leaving) {
      if (!(await isMemberOfNamedGroups(ctx.db.slonik, employerId, userId, mapping.scimGroups, before.groupId))) await change(userId, false);
    }
  };
}

function namesGroup(mapping: AdminRoleMapping, groupId: string, displayName: string): boolean {
  return mapping.scimGroups.some((name) => name === groupId || name.toLowerCase() === displayName.toLowerCase());
}

function removalRefusedMailTask(ctx: AppContext): Task {
  return async (payload) => {
    const { event, employerId } = await jobEvent(ctx, payload);
    const { userId, via } = (event as RecordedEvent<AdministratorRemovalRefused>).data;
    const to = await adminEmailsOf(ctx.db.slonik, employerId);
    if (to.length === 0) return void ctx.logger.warn({ employerId, eventId: event.eventId }, 'no active admin to e-mail');
    const who = (await userEmailOf(ctx.db.slonik, employerId, userId)) ?? `user ${userId}`;
    const how = via === 'deactivation' ? 'deactivate' : 'take the administrator role from';
    await ctx.mailer.send({
      to,
      subject: 'The identity provider would have removed the last administrator',
      text: [
        `At ${event.metadata.occurredAt} your identity provider tried to ${how} ${who}, the employer's last administrator. It was refused:`,
        'an employer always keeps at least one administrator.',
        '',
        `Make another administrator (add a user to a mapped group, or map another group) before offboarding this one: ${ctx.config.PUBLIC_BASE_URL}/#/sso`,
      ].join('\n'),
      messageId: `<${event.eventId}@employer-integrations>`,
    });
  };
}
