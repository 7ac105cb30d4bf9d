import type { JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import type { Organization } from '../../client/index.js';
import { EmptyState, ErrorState, FieldError, fieldError, SecretOnce } from '../components/ui.js';
import { useClient } from '../live/context.js';
import { href } from '../router.js';

/** The organizations the credential sees, and a form to create one (the server says whether it may). */
export function OrganizationsView(): JSX.Element {
  const client = useClient();
  const [orgs, setOrgs] = useState<Organization[] | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const [name, setName] = useState('');
  const [cidr, setCidr] = useState('');
  const [createError, setCreateError] = useState<unknown>(undefined);
  // The owner invitation an organization made without an owner comes with a token the server shows once.
  const [ownerInvitation, setOwnerInvitation] = useState<{ org: Organization; token: string } | undefined>(undefined);
  const load = async (): Promise<void> => {
    try {
      setOrgs((await client.organizations.list()).items);
      setError(undefined);
    } catch (err) {
      setError(err);
    }
  };
  useEffect(() => void load(), [client]);
  const create = async (e: Event): Promise<void> => {
    e.preventDefault();
    try {
      const org = await client.organizations.create({ name: name.trim(), ...(cidr.trim() ? { network: { ipv4_cidr: cidr.trim() } } : {}) });
      setName('');
      setCidr('');
      setCreateError(undefined);
      const token = org.owner_invitation?.token;
      if (token === undefined) location.hash = href('fleet', org.id);
      else setOwnerInvitation({ org, token });
    } catch (err) {
      setCreateError(err);
    }
  };
  return (
    <main>
      <h1>Organizations</h1>
      {error ? <ErrorState error={error} title="Could not list organizations" /> : null}
      {orgs === undefined && !error ? <p class="muted">Loading…</p> : null}
      {orgs?.length === 0 ? <EmptyState title="No organizations yet">Create the first one below.</EmptyState> : null}
      {orgs && orgs.length > 0 ? (
        <div class="panel">
          <table>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Network</th>
                <th scope="col">Description</th>
              </tr>
            </thead>
            <tbody>
              {orgs.map((o) => (
                <tr key={o.id} data-testid="orgs-row">
                  <td>
                    <a href={href('fleet', o.id)}>{o.name}</a>
                  </td>
                  <td>{o.network.ipv4_cidr}</td>
                  <td class="muted">{o.description}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
      <h2>Create an organization</h2>
      {ownerInvitation ? (
        <div data-testid="org-owner-invitation">
          <SecretOnce
            label={`${ownerInvitation.org.name} was created without an owner. Its owner invitation: give it to whoever will own it (they sign in and accept it: fleetplane ctl invitations accept TOKEN)`}
            secret={ownerInvitation.token}
            onDone={() => {
              const id = ownerInvitation.org.id;
              setOwnerInvitation(undefined);
              location.hash = href('fleet', id);
            }}
          />
        </div>
      ) : null}
      <form class="panel" onSubmit={(e) => void create(e)}>
        <label for="org-name">Name</label>
        <input id="org-name" data-testid="org-name" value={name} onInput={(e) => setName(e.currentTarget.value)} required />
        <FieldError error={createError} path="/name" />
        <label for="org-cidr">Tunnel network (IPv4 CIDR, optional)</label>
        <input id="org-cidr" placeholder="100.64.0.0/16" value={cidr} onInput={(e) => setCidr(e.currentTarget.value)} />
        <FieldError error={createError} path="/network" />
        {createError !== undefined && !fieldError(createError, '/name') && !fieldError(createError, '/network') ? <ErrorState error={createError} title="Not created" /> : null}
        <div class="toolbar" style={{ marginTop: '0.75rem' }}>
          <button class="primary" type="submit" data-testid="org-create">
            Create
          </button>
        </div>
      </form>
    </main>
  );
}
