import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import type { SecurityGroup } from '../../client/index.js';
import { ErrorState, FieldError, fieldError } from '../components/ui.js';
import { useClient } from '../live/context.js';
import { draftOf, emptyDraft, ruleOf, RuleRow, type Direction, type RuleDraft } from './security-group-rule-row.js';
import { typedList } from '../components/typed-lists.js';

/** Fields whose server errors the form shows at the field; any other shows above the buttons. */
const FIELD_PATHS = ['/name', '/description', '/applies_to', '/inbound_rules', '/outbound_rules'];

/**
 * One group's fields and rules, editable (a new group when `group` is
 * undefined). The server's errors show in words at the field they name, a
 * taken name (409 `already_exists` at `/name`) too; any other above the
 * buttons. `onDone` is called with what a save did ("Created web",
 * "Saved web"), or without an argument on cancel.
 */
export function GroupEditor(props: { org: string; group: SecurityGroup | undefined; onDone: (saved?: string) => void }): JSX.Element {
  const client = useClient();
  const [name, setName] = useState(props.group?.name ?? '');
  const [description, setDescription] = useState(props.group?.description ?? '');
  const [appliesTo, setAppliesTo] = useState((props.group?.applies_to ?? []).join(', '));
  const [drafts, setDrafts] = useState<Record<Direction, RuleDraft[]>>({
    inbound_rules: props.group?.inbound_rules.map(draftOf) ?? [],
    outbound_rules: props.group?.outbound_rules.map(draftOf) ?? [],
  });
  const [error, setError] = useState<unknown>(undefined);
  const [busy, setBusy] = useState(false);
  const save = async (e: Event): Promise<void> => {
    e.preventDefault();
    setBusy(true);
    try {
      const body = {
        name: name.trim() === '' ? null : name.trim(),
        description,
        applies_to: typedList(appliesTo),
        inbound_rules: drafts.inbound_rules.map(ruleOf),
        outbound_rules: drafts.outbound_rules.map(ruleOf),
      };
      const saved = props.group ? await client.securityGroups.update(props.org, props.group.id, body) : await client.securityGroups.create(props.org, body);
      setError(undefined);
      props.onDone(`${props.group ? 'Saved' : 'Created'} ${saved.name ?? (saved.description || saved.id)}`);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
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
            <th scope="col">{dir === 'inbound_rules' ? 'From' : 'To'}: CIDRs, IPs, tag:NAME, group:NAME (comma separated; empty: anywhere)</th>
            <th scope="col"><span class="visually-hidden">Remove</span></th>
          </tr>
        </thead>
        <tbody>
          {drafts[dir].map((d, i) => (
            <RuleRow
              key={i}
              dir={dir}
              index={i}
              title={title}
              draft={d}
              error={error}
              onChange={(next) => setDrafts({ ...drafts, [dir]: drafts[dir].map((x, j) => (j === i ? next : x)) })}
              onRemove={() => setDrafts({ ...drafts, [dir]: drafts[dir].filter((_, j) => j !== i) })}
            />
          ))}
        </tbody>
      </table>
      <FieldError error={error} path={`/${dir}`} exact />
      <button type="button" data-testid={`sg-add-${dir}`} onClick={() => setDrafts({ ...drafts, [dir]: [...drafts[dir], emptyDraft()] })}>Add a rule</button>
    </fieldset>
  );
  const named = FIELD_PATHS.some((p) => fieldError(error, p) !== undefined);
  return (
    // noValidate: the server's checks, in words at their field, not the browser's bubble that blocks the save.
    <form noValidate onSubmit={(e) => void save(e)} aria-label={props.group ? `Edit ${props.group.name ?? (props.group.description || props.group.id)}` : 'New security group'}>
      <label for="sg-name">Name (what group:NAME in rules selects)</label>
      <input id="sg-name" data-testid="sg-name" value={name} aria-describedby={fieldError(error, '/name') ? 'sg-name-error' : undefined} onInput={(e) => setName(e.currentTarget.value)} />
      <FieldError error={error} path="/name" id="sg-name-error" />
      <label for="sg-description">Description</label>
      <input id="sg-description" data-testid="sg-description" value={description} onInput={(e) => setDescription(e.currentTarget.value)} style={{ width: '100%' }} />
      <FieldError error={error} path="/description" />
      <label for="sg-applies-to">Applies to: devices with no group of their own carrying one of these tags are in it (tag:NAME, comma separated)</label>
      <input id="sg-applies-to" data-testid="sg-applies-to" value={appliesTo} onInput={(e) => setAppliesTo(e.currentTarget.value)} style={{ width: '100%' }} />
      <FieldError error={error} path="/applies_to" />
      {table('inbound_rules', 'Inbound')}
      {table('outbound_rules', 'Outbound')}
      {error !== undefined && !named ? <ErrorState error={error} title={props.group ? 'Not saved' : 'Not created'} /> : null}
      <div class="toolbar">
        <button type="submit" class="primary" data-testid="sg-save" disabled={busy}>Save</button>
        <button type="button" onClick={() => props.onDone()}>Cancel</button>
      </div>
    </form>
  );
}
