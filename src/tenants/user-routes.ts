// The employer's users, for an administrator's browser session: erasing a deactivated user's personal
// data (crypto-shredding, eraseUser), as `cli users erase` does.
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { AppContext } from '../app-context.ts';
import { commandContextOf } from '../auth/principal.ts';
import { defineRoute } from '../http/route.ts';
import type { RoutePlugin } from '../http/server.ts';
import { eraseUser } from './commands.ts';

export const userRoutes: RoutePlugin = async function userRoutesPlugin(fastify: FastifyInstance, { ctx }: { ctx: AppContext }) {
  defineRoute(fastify, ctx, {
    method: 'DELETE',
    url: '/api/employer/users/:userId/personal-data',
    summary: "Erase a deactivated user's personal data (crypto-shredding)",
    description:
      "Destroys the user's data key, so the profile in the user's events (sealed under it) is unreadable from then on, releases the user's e-mail address " +
      'and appends UserErased (which holds no personal data). The read models keep the user, its id and role, with the profile erased. ' +
      'Only a deactivated user (409 USER_ACTIVE otherwise). Repeating it answers the same.',
    tags: ['Users'],
    auth: { modes: ['session'], role: 'EMPLOYER_ADMIN' },
    params: z.object({ userId: z.string().max(64).meta({ description: "The user's id (SCIM `id`)" }) }),
    responses: { 200: { description: 'Erased', schema: z.object({ userId: z.string(), erasedAt: z.string() }) } },
    handler: async ({ params, principal, request }) => eraseUser(ctx, commandContextOf(principal, request.id), { userId: params.userId }),
  });
};
