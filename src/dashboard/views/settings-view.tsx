import type { JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import type { Organization } from '../../client/index.js';
import { PolicyNotice } from '../components/policy-notice.js';
import { ErrorState, FieldError, fieldError } from '../components/ui.js';
import { useClient } from '../live/context.js';
import { useOrganization } from '../live/hooks.js';
import { typedList } from '../components/typed-lists.js';


type Form = { description: string; cidr: string; mtu: string; resolvers: string; auto: string };
/** The fields a policy document owns while it manages the organization (all of `network` but `ipv4_cidr`). */
const POLICY_OWNED: ReadonlySet<keyof Form> = new Set(['mtu', 'resolvers', 'auto']);
const NOTICE_ID = 'settings-policy-notice';

function policyOwnedFields(o: Organization): Pick<Form, 'mtu' | 'resolvers' | 'auto'> {
  return { mtu: String(o.network.mtu), resolvers: o.network.resolvers.join(', '), auto: o.network.auto_approve_cidrs.join(', ') };
}

/** The organization's network settings; the server's validation errors show at their field; those a policy document owns are read-only while it does. */
export function SettingsView(props: { org: string }): JSX.Element {
  const client = useClient();
  const live = useOrganization(props.org);
  const [org, setOrg] = useState<Organization | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const [saved, setSaved] = useState(false);
  const [form, setForm] = useState<Form>({ description: '', cidr: '', mtu: '', resolvers: '', auto: '' });
  useEffect(() => {
    client.organizations.get(props.org).then((o) => {
      setOrg(o);
      setForm({ description: o.description, cidr: o.network.ipv4_cidr, ...policyOwnedFields(o) });
    }, setError);
  }, [client, props.org]);
  // The watch stream is newer than the first read; while a document manages the fields they follow it, so a release leaves them current.
  const current = live ?? org;
  const managed = Boolean(current?.policy);
  useEffect(() => {
    if (managed && current) setForm((f) => ({ ...f, ...policyOwnedFields(current) }));
  }, [managed, current?.revision]);
  const save = async (e: Event): Promise<void> => {
    e.preventDefault();
    setSaved(false);
    try {
      const network = managed
        ? { ipv4_cidr: form.cidr.trim() }
        : { ipv4_cidr: form.cidr.trim(), mtu: Number(form.mtu), resolvers: typedList(form.resolvers), auto_approve_cidrs: typedList(form.auto) };
      const o = await client.organizations.update(props.org, { description: form.description, network });
      setOrg(o);
      setError(undefined);
      setSaved(true);
    } catch (err) {
      setError(err);
    }
  };
  if (!org || !current) return <main>{error ? <ErrorState error={error} /> : <p class="muted">Loading…</p>}</main>;
  const named = ['/description', '/network'].some((p) => fieldError(error, p) !== undefined);
  const field = (id: keyof Form, label: string, path: string): JSX.Element => {
    const readOnly = managed && POLICY_OWNED.has(id);
    return (
      <div>
        <label for={`settings-${id}`}>{label}</label>
        <input
          id={`settings-${id}`}
          value={form[id]}
          readOnly={readOnly}
          aria-describedby={readOnly ? NOTICE_ID : undefined}
          data-policy-owned={readOnly ? 'true' : undefined}
          onInput={(e) => setForm({ ...form, [id]: e.currentTarget.value })}
          style={{ width: '100%' }}
        />
        <FieldError error={error} path={path} />
      </div>
    );
  };
  return (
    <main>
      <h1>{current.name}: settings</h1>
      <form class="panel" onSubmit={(e) => void save(e)}>
        {field('description', 'Description', '/description')}
        {field('cidr', 'Tunnel network (IPv4 CIDR)', '/network/ipv4_cidr')}
        {managed ? <PolicyNotice id={NOTICE_ID} what="The MTU, DNS resolvers and routes approved on request are" org={current.name} /> : null}
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
