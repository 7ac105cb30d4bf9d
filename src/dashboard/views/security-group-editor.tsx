import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import type { SecurityGroup } from '../../client/index.js';
import { GROUP_PREFIX, TAG_PREFIX } from '../../protocol/wire.js';
import { ErrorState, FieldError, fieldError } from '../components/ui.js';
import { useClient } from '../live/context.js';

type Rule = SecurityGroup['inbound_rules'][number];

const PROTOCOLS: readonly Rule['ip_protocol'][] = ['tcp', 'udp', 'icmp', 'icmpv6', 'any'];
type Direction = 'inbound_rules' | 'outbound_rules';

function emptyRule(): Rule {
  return { ip_protocol: 'tcp', from_port: 0, to_port: 0, ip_ranges: [] };
}

/** One text field for a rule's addresses: ranges, and devices by tag:/group: reference. */
function addressesText(r: Rule): string {
  return [...r.ip_ranges, ...(r.devices ?? [])].join(', ');
}

/** `r` with the addresses `text` gives; a rule naming no device carries no `devices`, as the server stores what it is sent. */
function withAddresses(r: Rule, text: string): Rule {
  const items = text.split(',').map((x) => x.trim()).filter(Boolean);
  const isReference = (x: string): boolean => x.startsWith(TAG_PREFIX) || x.startsWith(GROUP_PREFIX);
  const { devices: _previous, ...rest } = r;
  const devices = items.filter(isReference);
  const ip_ranges = items.filter((x) => !isReference(x));
  return devices.length > 0 ? { ...rest, ip_ranges, devices } : { ...rest, ip_ranges };
}

/** Tags as typed: comma or space separated. */
function tagsOf(text: string): string[] {
  return text.split(/[\s,]+/).filter(Boolean);
}

/** One group's fields and rules, editable; the server's validation error is shown at the field it names. */
export function GroupEditor(props: { org: string; group: SecurityGroup | undefined; onDone: () => void }): JSX.Element {
  const client = useClient();
  const [name, setName] = useState(props.group?.name ?? '');
  const [description, setDescription] = useState(props.group?.description ?? '');
  const [appliesTo, setAppliesTo] = useState((props.group?.applies_to ?? []).join(', '));
  const [rules, setRules] = useState<Record<Direction, Rule[]>>({
    inbound_rules: props.group?.inbound_rules.map((r) => ({ ...r })) ?? [],
    outbound_rules: props.group?.outbound_rules.map((r) => ({ ...r })) ?? [],
  });
  const [error, setError] = useState<unknown>(undefined);
  const set = (dir: Direction, i: number, patch: Partial<Rule>): void => setRules({ ...rules, [dir]: rules[dir].map((r, j) => (j === i ? { ...r, ...patch } : r)) });
  const setAddresses = (dir: Direction, i: number, text: string): void =>
    setRules({ ...rules, [dir]: rules[dir].map((r, j) => (j === i ? withAddresses(r, text) : r)) });
  const save = async (e: Event): Promise<void> => {
    e.preventDefault();
    try {
      const body = { name: name === '' ? null : name, description, applies_to: tagsOf(appliesTo), ...rules };
      if (props.group) await client.securityGroups.update(props.org, props.group.id, body);
      else await client.securityGroups.create(props.org, body);
      setError(undefined);
      props.onDone();
    } catch (err) {
      setError(err);
    }
  };
  const table = (dir: Direction, title: string): JSX.Element => (
    <fieldset class="panel">
      <legend>{title}</legend>
      <table class="rules">
        <thead>
          <tr>
            <th scope="col">Protocol</th>
            <th scope="col">From port</th>
            <th scope="col">To port</th>
            <th scope="col">Addresses: CIDRs, IPs, tag:NAME, group:NAME (comma separated)</th>
            <th scope="col"><span class="visually-hidden">Remove</span></th>
          </tr>
        </thead>
        <tbody>
          {rules[dir].map((r, i) => {
            const at = `/${dir}/${i}`;
            return (
              <tr key={i}>
                <td>
                  <select aria-label={`${title} rule ${i + 1} protocol`} value={r.ip_protocol} onChange={(e) => set(dir, i, { ip_protocol: e.currentTarget.value as Rule['ip_protocol'] })}>
                    {PROTOCOLS.map((p) => <option key={p} value={p}>{p}</option>)}
                  </select>
                </td>
                <td>
                  <input aria-label={`${title} rule ${i + 1} from port`} data-testid={`sg-${dir}-${i}-from`} type="number" value={r.from_port} onInput={(e) => set(dir, i, { from_port: Number(e.currentTarget.value) })} />
                  <FieldError error={error} path={`${at}/from_port`} />
                </td>
                <td>
                  <input aria-label={`${title} rule ${i + 1} to port`} data-testid={`sg-${dir}-${i}-to`} type="number" value={r.to_port} onInput={(e) => set(dir, i, { to_port: Number(e.currentTarget.value) })} />
                  <FieldError error={error} path={`${at}/to_port`} />
                </td>
                <td>
                  <input aria-label={`${title} rule ${i + 1} IP ranges`} data-testid={`sg-${dir}-${i}-ranges`} value={addressesText(r)} onInput={(e) => setAddresses(dir, i, e.currentTarget.value)} />
                  <FieldError error={error} path={`${at}/ip_ranges`} />
                  <FieldError error={error} path={`${at}/devices`} />
                </td>
                <td>
                  <button type="button" class="danger" onClick={() => setRules({ ...rules, [dir]: rules[dir].filter((_, j) => j !== i) })}>Remove</button>
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
      <FieldError error={error} path={`/${dir}`} exact />
      <button type="button" data-testid={`sg-add-${dir}`} onClick={() => setRules({ ...rules, [dir]: [...rules[dir], emptyRule()] })}>Add a rule</button>
    </fieldset>
  );
  const named = ['/name', '/description', '/applies_to', '/inbound_rules', '/outbound_rules'].some((p) => fieldError(error, p) !== undefined);
  return (
    <form onSubmit={(e) => void save(e)} aria-label={props.group ? `Edit ${props.group.name ?? (props.group.description || props.group.id)}` : 'New security group'}>
      <label for="sg-name">Name (what group:NAME in rules selects)</label>
      <input id="sg-name" data-testid="sg-name" value={name} onInput={(e) => setName(e.currentTarget.value)} />
      <FieldError error={error} path="/name" />
      <label for="sg-description">Description</label>
      <input id="sg-description" data-testid="sg-description" value={description} onInput={(e) => setDescription(e.currentTarget.value)} style={{ width: '100%' }} />
      <FieldError error={error} path="/description" />
      <label for="sg-applies-to">Applies to: devices with no group of their own carrying one of these tags are in it (tag:NAME, comma separated)</label>
      <input id="sg-applies-to" data-testid="sg-applies-to" value={appliesTo} onInput={(e) => setAppliesTo(e.currentTarget.value)} style={{ width: '100%' }} />
      <FieldError error={error} path="/applies_to" />
      {table('inbound_rules', 'Inbound')}
      {table('outbound_rules', 'Outbound')}
      {error !== undefined && !named ? <ErrorState error={error} title="Not saved" /> : null}
      <div class="toolbar">
        <button type="submit" class="primary" data-testid="sg-save">Save</button>
        <button type="button" onClick={props.onDone}>Cancel</button>
      </div>
    </form>
  );
}
