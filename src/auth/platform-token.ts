// The platform-token authentication mode: `Authorization: Bearer <token>` on the internal platform API
// (/api/platform/v1/) only. The token is looked up by its SHA-256 (the platform-token port, implemented
// by the workflows capability) and must hold the route's family.
import type { FastifyRequest } from 'fastify';
import type { AppContext } from '../app-context.ts';
import { sha256Hex } from '../crypto/tokens.ts';
import { DomainError } from '../event-store/decider.ts';
import type { PlatformPrincipal } from './principal.ts';

export async function authenticatePlatformToken(ctx: AppContext, request: FastifyRequest, family: string): Promise<PlatformPrincipal> {
  const token = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '')?.[1];
  if (!token) throw new DomainError('unauthenticated', 'PLATFORM_TOKEN_REQUIRED', 'This internal platform route requires Authorization: Bearer <platform service token>.');
  const found = await ctx.auth.platformTokens(sha256Hex(token));
  if (!found) throw new DomainError('unauthenticated', 'INVALID_PLATFORM_TOKEN', 'The platform service token is not valid.');
  if (found.revoked) throw new DomainError('unauthenticated', 'PLATFORM_TOKEN_REVOKED', 'The platform service token has been revoked.');
  if (!found.families.includes(family)) {
    throw new DomainError('forbidden', 'PLATFORM_FAMILY_NOT_ALLOWED', `The platform service token does not hold the family ${family}.`, { requiredFamily: family, tokenFamilies: [...found.families] });
  }
  const principal: PlatformPrincipal = { kind: 'platformToken', tokenId: found.id, families: found.families };
  return principal;
}
