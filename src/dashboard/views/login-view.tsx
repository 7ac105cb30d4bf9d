import type { JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { paths } from '../../protocol/wire.js';
import { describeError } from '../components/ui.js';
import { useClient } from '../live/context.js';

/** Sign in: paste a token (kept by the server in an HttpOnly cookie), or go through the identity provider. */
export function LoginView(props: { reason: string | undefined; onSignedIn: () => void }): JSX.Element {
  const client = useClient();
  const [token, setToken] = useState('');
  const [error, setError] = useState<string | undefined>(undefined);
  const [busy, setBusy] = useState(false);
  // Offered only when the server has an identity provider; a server that can't say (older, or unreachable) offers the token only.
  const [oidc, setOidc] = useState(false);
  useEffect(() => {
    const ac = new AbortController();
    client.auth.loginMethods({ signal: ac.signal }).then(
      (m) => setOidc(m.oidc),
      () => setOidc(false),
    );
    return () => ac.abort();
  }, [client]);
  const submit = async (e: Event): Promise<void> => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      await client.auth.signInWithToken(token.trim());
      setToken('');
      props.onSignedIn();
    } catch (err) {
      setError(describeError(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <main>
      <h1>Sign in to fleetplane</h1>
      {props.reason ? (
        <div class="banner warn" role="alert" data-testid="session-ended">
          {props.reason}
        </div>
      ) : null}
      <form class="panel" onSubmit={(e) => void submit(e)}>
        <label for="login-token">Token</label>
        <p class="muted">An admin token (printed by the server at its first start), an organization token, or a personal API key. The browser keeps it in a cookie scripts can't read.</p>
        <input id="login-token" data-testid="login-token" type="password" autoComplete="off" value={token} onInput={(e) => setToken(e.currentTarget.value)} style={{ width: '100%' }} required />
        {error ? (
          <div class="field-error" role="alert" data-testid="login-error">
            {error}
          </div>
        ) : null}
        <div class="toolbar" style={{ marginTop: '0.75rem' }}>
          <button class="primary" type="submit" data-testid="login-submit" disabled={busy || token.trim() === ''}>
            Sign in
          </button>
          {oidc ? (
            <a class="button" data-testid="login-oidc" href={`${paths.authOidcLogin()}?return_to=/`}>
              Sign in with the identity provider
            </a>
          ) : null}
        </div>
      </form>
    </main>
  );
}
