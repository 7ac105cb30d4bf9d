import type { JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { TOKEN_ROLES } from '../../protocol/wire.js';
import type { OrgToken, RegistrationKey } from '../../client/index.js';
import { EmptyState, ErrorState, SecretOnce } from '../components/ui.js';
import { useClient } from '../live/context.js';

type Role = (typeof TOKEN_ROLES)[number];

/** Registration keys (what agents enroll with) and organization tokens (what people and tools call the API with). */
export function CredentialsView(props: { org: string }): JSX.Element {
  const client = useClient();
  const [keys, setKeys] = useState<RegistrationKey[] | undefined>(undefined);
  const [tokens, setTokens] = useState<OrgToken[] | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const [secret, setSecret] = useState<{ label: string; value: string } | undefined>(undefined);
  const [keyDescription, setKeyDescription] = useState('');
  const [singleUse, setSingleUse] = useState(false);
  const [ephemeral, setEphemeral] = useState(false);
  const [tokenDescription, setTokenDescription] = useState('');
  const [role, setRole] = useState<Role>('read');
  const load = async (): Promise<void> => {
    try {
      const [k, t] = await Promise.all([client.registrationKeys.list(props.org), client.tokens.list(props.org)]);
      setKeys(k);
      setTokens(t);
      setError(undefined);
    } catch (err) {
      setError(err);
    }
  };
  useEffect(() => void load(), [client, props.org]);
  const act = async (f: () => Promise<void>): Promise<void> => {
    try {
      await f();
      await load();
    } catch (err) {
      setError(err);
    }
  };
  return (
    <main>
      <h1>Credentials</h1>
      {error ? <ErrorState error={error} /> : null}
      {secret ? <SecretOnce label={secret.label} secret={secret.value} onDone={() => setSecret(undefined)} /> : null}
      <h2>Registration keys</h2>
      <form
        class="panel toolbar"
        onSubmit={(e) => {
          e.preventDefault();
          void act(async () => {
            const k = await client.registrationKeys.create(props.org, { description: keyDescription, single_use: singleUse, ephemeral });
            setSecret({ label: 'New registration key', value: k.key });
            setKeyDescription('');
          });
        }}
      >
        <div>
          <label for="key-description">Description</label>
          <input id="key-description" value={keyDescription} onInput={(e) => setKeyDescription(e.currentTarget.value)} />
        </div>
        <label><input type="checkbox" checked={singleUse} onChange={(e) => setSingleUse(e.currentTarget.checked)} /> single use</label>
        <label><input type="checkbox" checked={ephemeral} onChange={(e) => setEphemeral(e.currentTarget.checked)} /> ephemeral devices</label>
        <button type="submit" class="primary" data-testid="key-create">Create a key</button>
      </form>
      {keys?.length === 0 ? <EmptyState title="No registration keys" /> : null}
      {keys && keys.length > 0 ? (
        <table class="panel">
          <thead>
            <tr><th scope="col">Description</th><th scope="col">Kind</th><th scope="col">Expires</th><th scope="col">Created</th><th scope="col"><span class="visually-hidden">Revoke</span></th></tr>
          </thead>
          <tbody>
            {keys.map((k) => (
              <tr key={k.id} data-testid="key-row">
                <td>{k.description || <span class="muted">{k.id}</span>}</td>
                <td>{[k.single_use ? (k.used ? 'single use, used' : 'single use') : 'reusable', k.ephemeral ? 'ephemeral' : ''].filter(Boolean).join(', ')}</td>
                <td>{k.expires_at ?? 'never'}</td>
                <td>{k.created_at}</td>
                <td><button type="button" class="danger" onClick={() => { if (confirm('Revoke this registration key? Agents can no longer enroll with it.')) void act(() => client.registrationKeys.delete(props.org, k.id)); }}>Revoke</button></td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      <h2>Organization tokens</h2>
      <form
        class="panel toolbar"
        onSubmit={(e) => {
          e.preventDefault();
          void act(async () => {
            const t = await client.tokens.create(props.org, { role, description: tokenDescription });
            setSecret({ label: `New ${role} token`, value: t.token });
            setTokenDescription('');
          });
        }}
      >
        <div>
          <label for="token-description">Description</label>
          <input id="token-description" value={tokenDescription} onInput={(e) => setTokenDescription(e.currentTarget.value)} />
        </div>
        <div>
          <label for="token-role">Role</label>
          <select id="token-role" value={role} onChange={(e) => setRole(e.currentTarget.value as Role)}>
            {TOKEN_ROLES.map((r) => <option key={r} value={r}>{r}</option>)}
          </select>
        </div>
        <button type="submit" class="primary" data-testid="token-create">Create a token</button>
      </form>
      {tokens?.length === 0 ? <EmptyState title="No organization tokens" /> : null}
      {tokens && tokens.length > 0 ? (
        <table class="panel">
          <thead>
            <tr><th scope="col">Description</th><th scope="col">Role</th><th scope="col">Expires</th><th scope="col">Created</th><th scope="col"><span class="visually-hidden">Revoke</span></th></tr>
          </thead>
          <tbody>
            {tokens.map((t) => (
              <tr key={t.id} data-testid="token-row" data-token-id={t.id}>
                <td>{t.description || <span class="muted">{t.id}</span>}</td>
                <td>{t.role}</td>
                <td>{t.expires_at ?? 'never'}</td>
                <td>{t.created_at}</td>
                <td><button type="button" class="danger" data-testid="token-revoke" onClick={() => { if (confirm('Revoke this token? Everything using it stops at once.')) void act(() => client.tokens.delete(props.org, t.id)); }}>Revoke</button></td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
    </main>
  );
}
