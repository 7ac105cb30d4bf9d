import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import type { PolicySecurityGroup, Rule } from '../../protocol/wire.js';
import type { SecurityGroup } from '../../client/index.js';
import type { GroupUsage } from '../live/group-usage.js';
import { plural, ruleText, rulesPreview } from './rule-text.js';

/** A group as the table shows it: an object, or one a policy document compiled (no revision of its own). */
export type ShownGroup = SecurityGroup | PolicySecurityGroup;

const SHOWN = 3;

/**
 * A group's rules of one direction in a line: the first three, `; `
 * separated, then a `+N more` button that shows them all (and back).
 */
function RulesPreview(props: { rules: readonly Rule[]; direction: 'from' | 'to'; testId: string }): JSX.Element {
  const [all, setAll] = useState(false);
  // No inbound rule admits nothing new; no outbound rule sends nothing new.
  if (props.rules.length === 0) return <span class="muted" data-testid={props.testId}>none</span>;
  const { texts, more } = all ? { texts: props.rules.map((r) => ruleText(r, props.direction)), more: 0 } : rulesPreview(props.rules, props.direction, SHOWN);
  const expandable = props.rules.length > SHOWN;
  return (
    <span class="rule-preview" data-testid={props.testId} data-rules={props.rules.length}>
      {texts.join('; ')}
      {expandable ? (
        <>
          {' '}
          <button type="button" class="link" aria-expanded={all} data-testid={`${props.testId}-more`} onClick={() => setAll(!all)}>
            {all ? 'fewer' : `+${more} more`}
          </button>
        </>
      ) : null}
    </span>
  );
}

/** `used by N devices`, or `used by no device` (muted), or `…` while the devices are not listed yet. */
function UsedBy(props: { id: string; usage: GroupUsage }): JSX.Element {
  if (!props.usage.synced) return <span class="muted" data-testid="sg-row-used-by">…</span>;
  const n = props.usage.counts.get(props.id) ?? 0;
  return (
    <span class={n === 0 ? 'muted' : undefined} data-testid="sg-row-used-by" data-count={n}>
      {n === 0 ? 'used by no device' : `used by ${plural(n, 'device')}`}
    </span>
  );
}

/**
 * The groups, one row each (`data-testid="sg-row"`), in the order given:
 * name, description, the tags it applies to, a preview of its rules each
 * way, and how many devices it holds (`usage`, bound as agents bind).
 * `actions` renders a last cell per row; without it the table has no controls.
 */
export function GroupsTable<G extends ShownGroup>(props: { groups: readonly G[]; source: 'objects' | 'policy'; usage: GroupUsage; actions?: ((g: G) => JSX.Element) | undefined }): JSX.Element {
  return (
    <div class="panel">
      <p class="muted" data-testid="sg-count">{plural(props.groups.length, 'security group')}</p>
      <table data-testid="sg-table" data-source={props.source}>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Description</th>
            <th scope="col">Applies to</th>
            <th scope="col">Inbound</th>
            <th scope="col">Outbound</th>
            <th scope="col">Devices</th>
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
              <td><RulesPreview rules={g.inbound_rules} direction="from" testId="sg-row-inbound" /></td>
              <td><RulesPreview rules={g.outbound_rules} direction="to" testId="sg-row-outbound" /></td>
              <td><UsedBy id={g.id} usage={props.usage} /></td>
              <td>{'revision' in g ? g.revision : <span class="muted" title="The policy document's groups change with the organization's revision">—</span>}</td>
              {props.actions ? <td>{props.actions(g)}</td> : null}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
