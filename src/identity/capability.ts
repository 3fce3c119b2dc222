import { identityProjection } from '../../projections/identity.ts';
import type { Capability } from '../capability.ts';
import { identityRoutes } from './routes.ts';

export const identityCapability: Capability = {
  name: 'identity',
  routes: [identityRoutes],
  projections: [identityProjection],
  auditMappers: {
    SessionStarted: (event) => ({ action: 'auth.session.start', targetType: 'user', targetId: String(event.data.userId) }),
    SessionEnded: (event) => ({ action: 'auth.session.end', targetType: 'user', targetId: String(event.data.userId), details: { reason: event.data.reason } }),
  },
};
