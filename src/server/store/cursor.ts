import { ApiError } from '../errors.js';

/**
 * A list cursor: where the listing is (`after`, a revision) and from which
 * revision on deletes must be reported (`since`; null: none, the listing
 * started from nothing). Opaque to clients.
 */
export interface Cursor {
  after: number;
  since: number | null;
}

export function encodeCursor(c: Cursor): string {
  return Buffer.from(JSON.stringify([c.after, c.since])).toString('base64url');
}

export function decodeCursor(text: string): Cursor {
  try {
    const parsed: unknown = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
    if (Array.isArray(parsed) && parsed.length === 2) {
      const [after, since] = parsed as unknown[];
      if (Number.isSafeInteger(after) && (after as number) >= 0 && (since === null || (Number.isSafeInteger(since) && (since as number) >= 0))) {
        return { after: after as number, since: since as number | null };
      }
    }
  } catch {
    // fall through to the error below: a cursor we can't read is the client's mistake
  }
  throw new ApiError('bad_request', 'invalid cursor in "after"', { path: '/after' });
}
