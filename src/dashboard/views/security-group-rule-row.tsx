import type { JSX } from 'preact';
import { FleetplaneError } from '../../client/index.js';
import { GROUP_PREFIX, TAG_PREFIX, type Rule } from '../../protocol/wire.js';
import { FieldError, fieldError } from '../components/ui.js';
import { PORTED } from './rule-text.js';

export type Direction = 'inbound_rules' | 'outbound_rules';

/** A rule as typed: ports and addresses as text, so a half-typed `10.0.0.0/8,` or an empty port stays as it is. */
export interface RuleDraft {
  ip_protocol: Rule['ip_protocol'];
  from: string;
  to: string;
  addresses: string;
}

const PROTOCOLS: readonly { value: Rule['ip_protocol']; label: string }[] = [
  { value: 'tcp', label: 'tcp' },
  { value: 'udp', label: 'udp' },
  { value: 'icmp', label: 'icmp' },
  { value: 'icmpv6', label: 'icmpv6' },
  { value: 'any', label: 'any protocol' },
];

export function emptyDraft(): RuleDraft {
  return { ip_protocol: 'tcp', from: '', to: '', addresses: '' };
}

export function draftOf(r: Rule): RuleDraft {
  const all = r.from_port === 0 && r.to_port === 0;
  return { ip_protocol: r.ip_protocol, from: all ? '' : String(r.from_port), to: all ? '' : String(r.to_port), addresses: [...r.ip_ranges, ...(r.devices ?? [])].join(', ') };
}

const isReference = (x: string): boolean => x.startsWith(TAG_PREFIX) || x.startsWith(GROUP_PREFIX);
const entries = (text: string): string[] => text.split(',').map((x) => x.trim()).filter(Boolean);

/**
 * The rule a draft sends. Ports only for tcp and udp (the server wants 0/0
 * for icmp and refuses others; for `any` they would mean nothing); both
 * empty: 0/0, all ports; only the first: that one port. No address: empty
 * `ip_ranges`, anywhere; a rule naming no device carries no `devices`, as
 * the server stores what it is sent.
 */
export function ruleOf(d: RuleDraft): Rule {
  const ported = PORTED.has(d.ip_protocol);
  const from = ported && d.from.trim() !== '' ? Number(d.from) : 0;
  const to = ported && d.to.trim() !== '' ? Number(d.to) : from;
  const items = entries(d.addresses);
  const devices = items.filter(isReference);
  const ip_ranges = items.filter((x) => !isReference(x));
  return { ip_protocol: d.ip_protocol, from_port: from, to_port: to, ip_ranges, ...(devices.length > 0 ? { devices } : {}) };
}

/** The entry of the addresses field a server error at `…/ip_ranges/N` or `…/devices/N` is about, to name it with the message. */
function badEntry(error: unknown, at: string, d: RuleDraft): string | undefined {
  const path = error instanceof FleetplaneError ? error.details?.['path'] : undefined;
  if (typeof path !== 'string' || fieldError(error, at) === undefined) return undefined;
  const m = /\/(ip_ranges|devices)\/(\d+)$/.exec(path);
  if (!m) return undefined;
  const rule = ruleOf(d);
  return (m[1] === 'devices' ? rule.devices ?? [] : rule.ip_ranges)[Number(m[2])];
}

/**
 * One editable rule: protocol; from and to ports for tcp and udp only (icmp
 * and `any` show that they have none); its addresses, where empty says
 * anywhere and a button makes it so. The server's errors show at their field.
 */
export function RuleRow(props: { dir: Direction; index: number; title: string; draft: RuleDraft; error: unknown; onChange: (d: RuleDraft) => void; onRemove: () => void }): JSX.Element {
  const { dir, index: i, title, draft: d, error } = props;
  const at = `/${dir}/${i}`;
  const id = `sg-${dir}-${i}`;
  const set = (patch: Partial<RuleDraft>): void => props.onChange({ ...d, ...patch });
  const ported = PORTED.has(d.ip_protocol);
  const anywhere = entries(d.addresses).length === 0;
  const way = dir === 'inbound_rules' ? 'from' : 'to';
  const entry = badEntry(error, `${at}/ip_ranges`, d) ?? badEntry(error, `${at}/devices`, d);
  return (
    <tr data-testid="sg-rule-row" data-protocol={d.ip_protocol}>
      <td>
        <select aria-label={`${title} rule ${i + 1} protocol`} data-testid={`${id}-protocol`} value={d.ip_protocol} onChange={(e) => set({ ip_protocol: e.currentTarget.value as Rule['ip_protocol'] })}>
          {PROTOCOLS.map((p) => <option key={p.value} value={p.value}>{p.label}</option>)}
        </select>
        <FieldError error={error} path={`${at}/ip_protocol`} />
        <FieldError error={error} path={at} exact />
      </td>
      {ported ? (
        <>
          <td>
            <input aria-label={`${title} rule ${i + 1} from port`} data-testid={`${id}-from`} type="number" min={0} max={65535} placeholder="all" value={d.from} onInput={(e) => set({ from: e.currentTarget.value })} />
            <FieldError error={error} path={`${at}/from_port`} />
          </td>
          <td>
            <input aria-label={`${title} rule ${i + 1} to port`} data-testid={`${id}-to`} type="number" min={0} max={65535} placeholder={d.from.trim() === '' ? 'all' : d.from} value={d.to} onInput={(e) => set({ to: e.currentTarget.value })} />
            <FieldError error={error} path={`${at}/to_port`} />
          </td>
        </>
      ) : (
        <td colSpan={2}>
          <span class="muted" data-testid={`${id}-no-ports`}>{d.ip_protocol === 'any' ? 'every port of every protocol' : `no ports (${d.ip_protocol})`}</span>
          <FieldError error={error} path={`${at}/from_port`} />
          <FieldError error={error} path={`${at}/to_port`} />
        </td>
      )}
      <td>
        <input
          aria-label={`${title} rule ${i + 1} addresses`}
          aria-describedby={`${id}-help`}
          data-testid={`${id}-ranges`}
          placeholder="anywhere"
          value={d.addresses}
          onInput={(e) => set({ addresses: e.currentTarget.value })}
        />
        <div class="field-help" id={`${id}-help`} data-testid={`${id}-help`}>
          {anywhere ? (
            `Empty: ${way} anywhere (every address).`
          ) : (
            <>
              Only these.{' '}
              <button type="button" class="link" data-testid={`${id}-anywhere`} onClick={() => set({ addresses: '' })}>
                Make it anywhere
              </button>
            </>
          )}
        </div>
        <FieldError error={error} path={`${at}/ip_ranges`} subject={entry} />
        <FieldError error={error} path={`${at}/devices`} subject={entry} />
      </td>
      <td>
        <button type="button" class="danger" onClick={props.onRemove}>Remove</button>
      </td>
    </tr>
  );
}
