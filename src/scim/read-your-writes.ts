// IdPs read right after they write (Okta POSTs a user, then GETs or PATCHes it), so a SCIM request
// answers only once the read models SCIM reads (users, groups, and the audit log) hold its writes.
// A request may run several commands (deactivation ends sessions): it waits once, at its last
// event, instead of after each command.
import type { AppContext } from '../app-context.ts';
import type { Position } from '../event-store/port.ts';
import type { UserCommandDeps } from '../tenants/commands.ts';

export type ScimWriter = {
  /** For handleCommand and the tenants commands: appends without waiting for read models. */
  deps: UserCommandDeps;
  /**
   * Resolves once users, groups and the audit log (and `alsoReadModels`, e.g. api-keys after a
   * deactivation revoked keys) have applied events up to `position` (bounded wait).
   */
  awaitReadModels(position: Position, alsoReadModels?: readonly string[]): Promise<void>;
};

export const SCIM_READ_MODELS = ['tenants', 'scim-groups', 'audit'];

export function createScimWriter(ctx: AppContext): ScimWriter {
  return {
    deps: { ...ctx.commands, waitForProjections: async () => true },
    async awaitReadModels(position, alsoReadModels = []) {
      if (!(await ctx.waitForReadModels(position, [...SCIM_READ_MODELS, ...alsoReadModels]))) {
        ctx.logger.warn({ position: `${position.commit}/${position.prepare}` }, 'SCIM read models lag behind a command');
      }
    },
  };
}
