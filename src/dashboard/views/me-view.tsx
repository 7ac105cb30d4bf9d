import type { JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import type { User } from '../../protocol/wire.js';
import { AuthError, NotFoundError, type FleetplaneClient } from '../../client/index.js';
import { ErrorState } from '../components/ui.js';
import { useClient } from '../live/context.js';
import { ApiKeysSection } from './api-keys-section.js';
import { SessionsSection } from './sessions-section.js';

/** Who the page is signed in as, as far as keys and sessions go. */
export type Signer =
  | { kind: 'session'; user: User; sessionId: string }
  | { kind: 'api-key' }
  | { kind: 'token' };

/**
 * Asks the server: only a user's session has a session (`GET /api/auth/session`,
 * 403 for anything else); a personal API key lists its user's keys, while
 * an admin token (404, no user) or an organization token (403) may not.
 */
async function whoSigned(client: FleetplaneClient): Promise<Signer> {
  try {
    const info = await client.auth.session();
    return { kind: 'session', user: info.user, sessionId: info.session.id };
  } catch (err) {
    if (!(err instanceof AuthError || err instanceof NotFoundError)) throw err;
  }
  try {
    await client.apiKeys.list();
    return { kind: 'api-key' };
  } catch (err) {
    if (err instanceof AuthError || err instanceof NotFoundError) return { kind: 'token' };
    throw err;
  }
}

/**
 * The signed-in user's own personal API keys and sessions. Signed in with a
 * session: both, and creating keys. With a personal API key: its user's
 * keys (a key may revoke, not create, and sees no sessions). With an admin
 * or organization token, which is no user: why there is nothing here.
 */
export function MeView(): JSX.Element {
  const client = useClient();
  const [signer, setSigner] = useState<Signer | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  useEffect(() => {
    whoSigned(client).then(setSigner, setError);
  }, [client]);
  return (
    <main>
      <h1>Your keys and sessions</h1>
      {error ? <ErrorState error={error} title="Could not tell who is signed in" /> : null}
      {signer === undefined && !error ? <p class="muted">Loading…</p> : null}
      {signer?.kind === 'session' ? (
        <p class="muted" data-testid="me-user">
          Signed in as {signer.user.name ?? signer.user.email ?? signer.user.subject} ({signer.user.email ?? signer.user.subject}).
        </p>
      ) : null}
      {signer?.kind === 'token' ? (
        <div class="panel" role="status" data-testid="me-not-a-user">
          <strong>This sign-in has no keys or sessions of its own.</strong>
          <p class="muted">
            You are signed in with an admin or organization token, which belongs to no user. Personal API keys and sessions belong to users: people who sign in
            through the identity provider, or with one of their personal API keys, see theirs here. Organization tokens are under each organization’s
            Credentials tab.
          </p>
        </div>
      ) : null}
      {signer && signer.kind !== 'token' ? <ApiKeysSection canCreate={signer.kind === 'session'} /> : null}
      {signer?.kind === 'session' ? <SessionsSection current={signer.sessionId} /> : null}
      {signer?.kind === 'api-key' ? (
        <p class="muted" data-testid="me-sessions-note">
          Signed in with a personal API key: keys are created, and sessions seen, only when signed in through the identity provider.
        </p>
      ) : null}
    </main>
  );
}
