import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { MEMBER_ROLES, type MemberRole } from '../../protocol/wire.js';
import { EmptyState, ErrorState, FieldError, SecretOnce, fieldError } from '../components/ui.js';
import { useClient } from '../live/context.js';
import { ConfirmAction } from '../components/confirm-action.js';
import { useListActions } from './use-list-actions.js';

/** Fields whose server errors the create form shows at the field; any other shows above the list. */
const FIELD_PATHS = ['/organizations', '/role', '/description', '/expires_at'];

/**
 * The signed-in user's personal API keys: listed (never their secrets) and
 * revoked, asking first. With `canCreate` (a session: a key never mints a
 * key), a form for a new one (organizations, role, description, optional
 * expiry date) whose secret is shown once.
 */
export function ApiKeysSection(props: { canCreate: boolean }): JSX.Element {
  const client = useClient();
  const { data, loadError, error, saved, act } = useListActions(
    async () => {
      const [keys, orgs] = await Promise.all([client.apiKeys.list(), client.organizations.list()]);
      return { keys, orgs: orgs.items };
    },
    [client],
  );
  const keys = data?.keys;
  const orgs = data?.orgs ?? [];
  const [secret, setSecret] = useState<string | undefined>(undefined);
  const [description, setDescription] = useState('');
  const [chosen, setChosen] = useState<readonly string[]>([]);
  const [role, setRole] = useState<MemberRole>('read');
  const [expires, setExpires] = useState('');
  const create = (e: Event): void => {
    e.preventDefault();
    void act(async () => {
      const created = await client.apiKeys.create({
        organizations: [...chosen],
        role,
        description: description.trim(),
        // The date input gives a day: the key lasts to its end (UTC).
        ...(expires ? { expires_at: new Date(`${expires}T23:59:59Z`).toISOString() } : {}),
      });
      setSecret(created.key);
      setDescription('');
      setExpires('');
      return `Created the key ${created.description || created.id}`;
    });
  };
  const orgName = (id: string): string => orgs.find((o) => o.id === id)?.name ?? id;
  const unplaced = error !== undefined && !FIELD_PATHS.some((p) => fieldError(error, p) !== undefined);
  return (
    <section aria-labelledby="api-keys-title">
      <h2 id="api-keys-title">Personal API keys</h2>
      <p class="muted">A key acts as you, in its organizations only, with at most its role and at most your role there.</p>
      {secret ? <SecretOnce label="New personal API key" secret={secret} onDone={() => setSecret(undefined)} /> : null}
      {props.canCreate ? (
        <form class="panel" onSubmit={create} aria-label="Create a personal API key">
          <fieldset>
            <legend>Organizations</legend>
            {orgs.length === 0 ? <p class="muted">You are a member of no organization yet.</p> : null}
            {orgs.map((o) => (
              <label key={o.id}>
                <input
                  type="checkbox"
                  data-testid="api-key-org"
                  value={o.id}
                  checked={chosen.includes(o.id)}
                  onChange={(e) => {
                    const on = e.currentTarget.checked;
                    setChosen((c) => (on ? [...c, o.id] : c.filter((x) => x !== o.id)));
                  }}
                />{' '}
                {o.name}
              </label>
            ))}
            <FieldError error={error} path="/organizations" />
          </fieldset>
          <div class="toolbar">
            <div>
              <label for="api-key-role">Role</label>
              <select id="api-key-role" data-testid="api-key-role" value={role} onChange={(e) => setRole(e.currentTarget.value as MemberRole)}>
                {MEMBER_ROLES.map((r) => <option key={r} value={r}>{r}</option>)}
              </select>
            </div>
            <div>
              <label for="api-key-description">Description</label>
              <input id="api-key-description" data-testid="api-key-description" value={description} onInput={(e) => setDescription(e.currentTarget.value)} />
              <FieldError error={error} path="/description" />
            </div>
            <div>
              <label for="api-key-expires">Expires (default: in 90 days)</label>
              <input id="api-key-expires" type="date" data-testid="api-key-expires" value={expires} onInput={(e) => setExpires(e.currentTarget.value)} />
              <FieldError error={error} path="/expires_at" />
            </div>
            <button type="submit" class="primary" data-testid="api-key-create">Create a key</button>
          </div>
        </form>
      ) : null}
      {unplaced ? <ErrorState error={error} title="Not saved" /> : null}
      {saved ? (
        <p class="banner ok" role="status" data-testid="api-keys-saved">
          {saved}
        </p>
      ) : null}
      {loadError ? <ErrorState error={loadError} title="Could not list your API keys" /> : null}
      {keys?.length === 0 ? <EmptyState title="No personal API keys" /> : null}
      {keys && keys.length > 0 ? (
        <table class="panel" data-testid="api-keys-table">
          <thead>
            <tr><th scope="col">Description</th><th scope="col">Organizations</th><th scope="col">Role</th><th scope="col">Expires</th><th scope="col">Created</th><th scope="col"><span class="visually-hidden">Revoke</span></th></tr>
          </thead>
          <tbody>
            {keys.map((k) => {
              const name = k.description || k.id;
              return (
                <tr key={k.id} data-testid="api-key-row" data-key-id={k.id}>
                  <td>{k.description || <span class="muted">{k.id}</span>}</td>
                  <td>{k.organizations.map(orgName).join(', ')}</td>
                  <td>{k.role}</td>
                  <td>{k.expires_at}</td>
                  <td>{k.created_at}</td>
                  <td>
                    <ConfirmAction
                      testId="api-key-revoke"
                      opener="Revoke…"
                      action="Revoke"
                      label={`Confirm revoking ${name}`}
                      question={`Revoke ${name}? Everything using it stops at once.`}
                      onConfirm={() => void act(async () => { await client.apiKeys.revoke(k.id); return `Revoked the key ${name}`; })}
                    />
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      ) : null}
    </section>
  );
}
