// What the workflows' routes share: who reads and reviews authorizations and tapering proposals, ids
// in paths, and the list pages' cursor.
import { z } from 'zod';

export const AUTHORIZATION_READ_AUTH = { modes: ['apiKey', 'session'], scope: 'authorization:read' } as const;
export const AUTHORIZATION_WRITE_AUTH = { modes: ['apiKey', 'session'], scope: 'authorization:write' } as const;
export const workflowId = z.string().max(100);
export const nextCursor = z.string().nullable().meta({ description: 'Pass as cursor for the next page; null on the last page.' });
