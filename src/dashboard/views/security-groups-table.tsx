import type { JSX } from 'preact';
import type { PolicySecurityGroup, Rule } from '../../protocol/wire.js';
import type { SecurityGroup } from '../../client/index.js';

/** A group as the table shows it: an object, or one a policy document compiled (no revision of its own). */
export type ShownGroup = SecurityGroup | PolicySecurityGroup;

const PORTED = new Set<Rule['ip_protocol']>(['tcp', 'udp']);

/** One rule in words: `tcp port 443 from 10.0.0.0/8, tag:lb`. */
export function ruleText(r: Rule, direction: 'from' | 'to'): string {
  const ports = !PORTED.has(r.ip_protocol) ? '' : r.from_port === 0 && r.to_port === 0 ? ' all ports' : r.from_port === r.to_port ? ` port ${r.from_port}` : ` ports ${r.from_port}-${r.to_port}`;
  const addresses = [...r.ip_ranges, ...(r.devices ?? [])];
  return `${r.ip_protocol}${ports} ${direction} ${addresses.length > 0 ? addresses.join(', ') : 'any address'}`;
}

function Rules(props: { rules: readonly Rule[]; direction: 'from' | 'to'; testId: string }): JSX.Element {
  // No inbound rule admits nothing new; no outbound rule sends nothing new.
  if (props.rules.length === 0) return <span class="muted" data-testid={props.testId}>none</span>;
  return (
    <ul class="rule-list" data-testid={props.testId}>
      {props.rules.map((r, i) => <li key={i}>{ruleText(r, props.direction)}</li>)}
    </ul>
  );
}

/**
 * The groups, one row each (`data-testid="sg-row"`), in the order given:
 * name, description, the tags it applies to, its rules. `actions` renders a
 * last cell per row; without it the table has no controls.
 */
export function GroupsTable<G extends ShownGroup>(props: { groups: readonly G[]; source: 'objects' | 'policy'; actions?: ((g: G) => JSX.Element) | undefined }): JSX.Element {
  return (
    <div class="panel">
      <table data-testid="sg-table" data-source={props.source}>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Description</th>
            <th scope="col">Applies to</th>
            <th scope="col">Inbound</th>
            <th scope="col">Outbound</th>
            <th scope="col">Revision</th>
            {props.actions ? <th scope="col"><span class="visually-hidden">Actions</span></th> : null}
          </tr>
        </thead>
        <tbody>
          {props.groups.map((g) => (
            <tr key={g.id} data-testid="sg-row" data-sg-id={g.id} data-source={props.source}>
              <td data-testid="sg-row-name">{g.name ?? '—'}</td>
              <td data-testid="sg-row-description">{g.description || <span class="muted">{g.id}</span>}</td>
              <td data-testid="sg-row-applies-to">{(g.applies_to ?? []).join(', ') || <span class="muted">—</span>}</td>
              <td><Rules rules={g.inbound_rules} direction="from" testId="sg-row-inbound" /></td>
              <td><Rules rules={g.outbound_rules} direction="to" testId="sg-row-outbound" /></td>
              <td>{'revision' in g ? g.revision : <span class="muted" title="The policy document's groups change with the organization's revision">—</span>}</td>
              {props.actions ? <td>{props.actions(g)}</td> : null}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
