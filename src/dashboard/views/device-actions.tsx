import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import type { DeviceObject, DevicePatch } from '../../client/index.js';
import { ErrorState, FieldError, fieldError } from '../components/ui.js';
import { useClient } from '../live/context.js';
import { useEnforcedGroups } from '../live/groups.js';
import { href } from '../router.js';
import { ConfirmAction } from '../components/confirm-action.js';
import { asTag, typedList } from '../components/typed-lists.js';


/** What a save said: shown next to the form until the next edit. */
type Outcome = { ok: true; what: string } | { ok: false; error: unknown } | undefined;

/** Fields whose server errors this form shows at the field; any other shows above the buttons. */
const FIELD_PATHS = ['/hostname', '/security_group_id', '/tags', '/approved_cidrs'];

/**
 * What an operator changes on one device: its name, security group, tags
 * and approved routes (advertised vs approved, approve or revoke each), and
 * delete. Each save says what it did, or the server's error at its field.
 * The group choice is read-only while a policy document binds groups.
 */
export function DeviceActions(props: { org: string; device: DeviceObject }): JSX.Element {
  const client = useClient();
  const d = props.device;
  const enforced = useEnforcedGroups(props.org);
  const [hostname, setHostname] = useState(d.hostname);
  const [group, setGroup] = useState(d.security_group_id ?? '');
  const [tags, setTags] = useState((d.tags ?? []).join(', '));
  const [outcome, setOutcome] = useState<Outcome>(undefined);
  const error = outcome && !outcome.ok ? outcome.error : undefined;

  const patch = async (body: DevicePatch, what: string): Promise<void> => {
    setOutcome(undefined);
    try {
      await client.devices.update(props.org, d.id, body);
      setOutcome({ ok: true, what });
    } catch (err) {
      setOutcome({ ok: false, error: err });
    }
  };
  const save = (e: Event): void => {
    e.preventDefault();
    const body: DevicePatch = {};
    const changed: string[] = [];
    if (hostname.trim() !== d.hostname) {
      body.hostname = hostname.trim();
      changed.push('name');
    }
    if (enforced.source === 'objects' && (group || null) !== d.security_group_id) {
      body.security_group_id = group || null;
      changed.push('security group');
    }
    const nextTags = typedList(tags).map(asTag);
    if (nextTags.join(',') !== [...(d.tags ?? [])].join(',')) {
      body.tags = nextTags;
      changed.push('tags');
    }
    if (changed.length === 0) {
      setOutcome({ ok: true, what: 'Nothing changed' });
      return;
    }
    void patch(body, `Saved: ${changed.join(', ')}`);
  };
  const routes = [...new Set([...d.advertise_cidrs, ...d.approved_cidrs])].sort();
  const setRoute = (cidr: string, approve: boolean): void => {
    const next = approve ? [...d.approved_cidrs, cidr] : d.approved_cidrs.filter((c) => c !== cidr);
    void patch({ approved_cidrs: next }, `${approve ? 'Approved' : 'Revoked'} ${cidr}`);
  };
  const remove = async (): Promise<void> => {
    try {
      await client.devices.delete(props.org, d.id);
      location.hash = href('devices', props.org);
    } catch (err) {
      setOutcome({ ok: false, error: err });
    }
  };
  const expire = async (): Promise<void> => {
    setOutcome(undefined);
    try {
      await client.devices.expireKey(props.org, d.id);
      setOutcome({ ok: true, what: `Expired ${d.hostname}'s key: its agent must enroll again` });
    } catch (err) {
      setOutcome({ ok: false, error: err });
    }
  };
  const unplaced = error !== undefined && !FIELD_PATHS.some((p) => fieldError(error, p) !== undefined);

  return (
    <section class="panel" aria-labelledby="device-actions-title">
      <h2 id="device-actions-title">Change this device</h2>
      <form onSubmit={save} aria-label="Device settings">
        <label for="device-hostname">Name</label>
        <input id="device-hostname" data-testid="device-hostname" value={hostname} onInput={(e) => setHostname(e.currentTarget.value)} />
        <FieldError error={error} path="/hostname" />
        <label for="device-group-select">Security group</label>
        {enforced.source === 'policy' ? (
          <p class="muted" data-testid="device-group-policy">The policy document decides the groups (by tags); change the document to move it.</p>
        ) : (
          <select id="device-group-select" data-testid="device-group-select" value={group} onChange={(e) => setGroup(e.currentTarget.value)}>
            <option value="">none (by its tags, if a group applies to one)</option>
            {enforced.groups.map((g) => (
              <option key={g.id} value={g.id}>
                {g.name ?? (g.description || g.id)}
              </option>
            ))}
          </select>
        )}
        <FieldError error={error} path="/security_group_id" />
        <label for="device-tags-input">Tags (tag:NAME, comma separated)</label>
        <input id="device-tags-input" data-testid="device-tags-input" value={tags} onInput={(e) => setTags(e.currentTarget.value)} />
        <FieldError error={error} path="/tags" />
        <div class="toolbar">
          <button type="submit" class="primary" data-testid="device-save">Save</button>
        </div>
      </form>
      <h3>Routes</h3>
      {routes.length === 0 ? (
        <p class="muted">The device advertises no routes (the agent's --advertise-routes).</p>
      ) : (
        <table data-testid="device-routes">
          <thead>
            <tr><th scope="col">Route</th><th scope="col">Advertised</th><th scope="col">Approved</th><th scope="col"><span class="visually-hidden">Action</span></th></tr>
          </thead>
          <tbody>
            {routes.map((cidr) => {
              const approved = d.approved_cidrs.includes(cidr);
              return (
                <tr key={cidr} data-testid="device-route" data-cidr={cidr}>
                  <td>{cidr}</td>
                  <td>{d.advertise_cidrs.includes(cidr) ? 'yes' : <span class="muted">no (approved only: not routed until advertised)</span>}</td>
                  <td>{approved ? <span class="tag ok">approved</span> : <span class="tag warn">waiting</span>}</td>
                  <td>
                    <button type="button" data-testid={approved ? 'device-route-revoke' : 'device-route-approve'} onClick={() => setRoute(cidr, !approved)}>
                      {approved ? 'Revoke' : 'Approve'}
                    </button>
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
      <FieldError error={error} path="/approved_cidrs" />
      {unplaced ? <ErrorState error={error} title="Not saved" /> : null}
      {outcome?.ok ? (
        <p class="banner ok" role="status" data-testid="device-saved">
          {outcome.what}
        </p>
      ) : null}
      <h3>Key</h3>
      <ConfirmAction
        testId="device-expire"
        opener="Expire key…"
        action="Expire key"
        danger={false}
        label="Confirm expiring the key"
        question={`Expire ${d.hostname}'s key? It loses access at once and stays listed until its agent enrolls again with a registration key.`}
        onConfirm={() => void expire()}
      />
      <h3>Delete</h3>
      <ConfirmAction
        testId="device-delete"
        opener="Delete this device…"
        action="Delete"
        label="Confirm delete"
        question={`Delete ${d.hostname}? Its agent loses access at once and every peer drops it.`}
        onConfirm={() => void remove()}
      />
    </section>
  );
}
