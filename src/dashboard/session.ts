import { AuthError, FleetplaneClient, type FetchLike } from '../client/index.js';

/**
 * The page's one SDK client. It sends no Authorization header: the browser
 * sends the HttpOnly cookie the server set at sign-in (a pasted token's, or
 * an identity provider login's session), so no script of the page ever holds
 * the credential.
 */
export function pageClient(onUnauthorized: () => void, onReachable: (ok: boolean) => void): FleetplaneClient {
  const fetchWithCookie: FetchLike = async (input, init) => {
    try {
      const res = await globalThis.fetch(input, { ...init, credentials: 'same-origin' });
      onReachable(true);
      if (res.status === 401) onUnauthorized();
      return res;
    } catch (err) {
      // An aborted stream is not the server going away.
      if (!(err instanceof DOMException && err.name === 'AbortError')) onReachable(false);
      throw err;
    }
  };
  return new FleetplaneClient({ baseUrl: location.origin, fetch: fetchWithCookie });
}

/** What the page knows of its sign-in. */
export type SessionState =
  | { state: 'checking' }
  | { state: 'signed-out'; reason?: string | undefined }
  | { state: 'signed-in' };

/** Whether the browser's cookie still signs it in: one cheap call any operator credential may make. */
export async function checkSession(client: FleetplaneClient): Promise<SessionState> {
  try {
    await client.organizations.list({});
    return { state: 'signed-in' };
  } catch (err) {
    if (err instanceof AuthError) return { state: 'signed-out' };
    throw err;
  }
}
