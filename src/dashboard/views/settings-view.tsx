import type { JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import type { Organization } from '../../client/index.js';
import { ErrorState, FieldError, fieldError } from '../components/ui.js';
import { useClient } from '../live/context.js';

const lines = (s: string): string[] => s.split(/[\s,]+/).map((x) => x.trim()).filter(Boolean);

/** The organization's network settings; the server's validation errors show at their field. */
export function SettingsView(props: { org: string }): JSX.Element {
  const client = useClient();
  const [org, setOrg] = useState<Organization | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const [saved, setSaved] = useState(false);
  const [form, setForm] = useState({ description: '', cidr: '', mtu: '', resolvers: '', auto: '' });
  useEffect(() => {
    client.organizations.get(props.org).then((o) => {
      setOrg(o);
      setForm({ description: o.description, cidr: o.network.ipv4_cidr, mtu: String(o.network.mtu), resolvers: o.network.resolvers.join(', '), auto: o.network.auto_approve_cidrs.join(', ') });
    }, setError);
  }, [client, props.org]);
  const save = async (e: Event): Promise<void> => {
    e.preventDefault();
    setSaved(false);
    try {
      const o = await client.organizations.update(props.org, {
        description: form.description,
        network: { ipv4_cidr: form.cidr.trim(), mtu: Number(form.mtu), resolvers: lines(form.resolvers), auto_approve_cidrs: lines(form.auto) },
      });
      setOrg(o);
      setError(undefined);
      setSaved(true);
    } catch (err) {
      setError(err);
    }
  };
  if (!org) return <main>{error ? <ErrorState error={error} /> : <p class="muted">Loading…</p>}</main>;
  const named = ['/description', '/network'].some((p) => fieldError(error, p) !== undefined);
  const field = (id: keyof typeof form, label: string, path: string): JSX.Element => (
    <div>
      <label for={`settings-${id}`}>{label}</label>
      <input id={`settings-${id}`} value={form[id]} onInput={(e) => setForm({ ...form, [id]: e.currentTarget.value })} style={{ width: '100%' }} />
      <FieldError error={error} path={path} />
    </div>
  );
  return (
    <main>
      <h1>{org.name}: settings</h1>
      <form class="panel" onSubmit={(e) => void save(e)}>
        {field('description', 'Description', '/description')}
        {field('cidr', 'Tunnel network (IPv4 CIDR)', '/network/ipv4_cidr')}
        {field('mtu', 'MTU', '/network/mtu')}
        {field('resolvers', 'DNS resolvers', '/network/resolvers')}
        {field('auto', 'Routes approved on request (CIDRs)', '/network/auto_approve_cidrs')}
        {error !== undefined && !named ? <ErrorState error={error} title="Not saved" /> : null}
        {saved ? <p role="status">Saved.</p> : null}
        <div class="toolbar" style={{ marginTop: '0.75rem' }}>
          <button type="submit" class="primary">Save</button>
        </div>
      </form>
    </main>
  );
}
