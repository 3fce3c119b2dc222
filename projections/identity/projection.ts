// Read models `signin_tokens` and `sessions`: what the sign-in exchange and every cookie check read.
import { sql } from 'slonik';
import { defineProjection } from '../../src/event-store/projection.ts';
import type { SessionEvent, SignInTokenEvent } from '../../src/identity/events.ts';

export const identityProjection = defineProjection<SignInTokenEvent | SessionEvent>({
  name: 'identity',
  tables: ['signin_tokens', 'sessions'],
  eventTypes: ['SignInTokenIssued', 'SignInTokenRedeemed', 'SessionStarted', 'SessionEnded'],
  awaitedByCommands: true,
  async apply(tx, events) {
    for (const event of events) {
      const employerId = event.metadata.tenantId!;
      const at = event.metadata.occurredAt;
      switch (event.type) {
        case 'SignInTokenIssued':
          await tx.query(sql.unsafe`
            INSERT INTO signin_tokens (token_hash, token_id, employer_id, user_id, expires_at)
            VALUES (${event.data.tokenHash}, ${event.data.tokenId}, ${employerId}, ${event.data.userId}, ${event.data.expiresAt})`);
          break;
        case 'SignInTokenRedeemed':
          await tx.query(sql.unsafe`UPDATE signin_tokens SET redeemed_at = ${at} WHERE token_id = ${event.data.tokenId}`);
          break;
        case 'SessionStarted':
          await tx.query(sql.unsafe`
            INSERT INTO sessions (session_hash, session_id, employer_id, user_id, created_at, expires_at)
            VALUES (${event.data.sessionHash}, ${event.data.sessionId}, ${employerId}, ${event.data.userId}, ${at}, ${event.data.expiresAt})`);
          break;
        case 'SessionEnded':
          await tx.query(sql.unsafe`UPDATE sessions SET ended_at = ${at} WHERE session_id = ${event.data.sessionId}`);
          break;
      }
    }
  },
});
