import { findActiveSession } from '../../projections/identity/queries.ts';
import { identityProjection } from '../../projections/identity/projection.ts';
import type { Capability } from '../capability.ts';
import { identityAuditMappers } from './audit.ts';
import { sha256Hex } from '../crypto/tokens.ts';
import { identityRoutes } from './routes.ts';
import { identityEvents } from './events.ts';

export const identityCapability: Capability = {
  name: 'identity',
  events: identityEvents,
  routes: [identityRoutes],
  projections: [identityProjection],
  auditMappers: identityAuditMappers,
  // Sessions are this capability's; core's authentication asks it through its port.
  start: async (ctx) => ({
    auth: {
      sessions: async (sessionSecret) => {
        const session = await findActiveSession(ctx.db.pg, sha256Hex(sessionSecret));
        return session && { sessionId: session.session_id, employerId: session.employer_id, userId: session.user_id, role: session.role };
      },
    },
  }),
};
