import type { JSX } from 'preact';
import { useEffect, useMemo, useState } from 'preact/hooks';
import { AUDIT_ACTIONS, AUDIT_KINDS, AUDIT_REDACTED, auditChanges, isAuditTruncated, type AuditAction, type AuditEntry, type AuditKind } from '../../protocol/wire.js';
import { FleetplaneError, type AuditFilter } from '../../client/index.js';
import { EmptyState, ErrorState } from '../components/ui.js';
import { useClient } from '../live/context.js';
import { useInformerItems } from '../live/hooks.js';
import { href } from '../router.js';

const PAGE = 50;

/** A change's value as a short text: JSON, the redaction as it is, a truncated one by its size. */
function shown(v: unknown): string {
  if (v === AUDIT_REDACTED) return 'redacted';
  if (isAuditTruncated(v)) return `(${v.bytes.toLocaleString('en-US')} bytes, not kept)`;
  if (v === null || v === undefined) return '—';
  const text = typeof v === 'string' ? v : JSON.stringify(v);
  return text.length > 80 ? `${text.slice(0, 79)}…` : text;
}

function actorText(e: AuditEntry): string {
  return e.actor.id === null ? e.actor.type : `${e.actor.type} ${e.actor.id.slice(0, 8)}`;
}

/** Where an entry's object is shown in the dashboard, while it still exists. */
function objectHref(org: string, e: AuditEntry, live: { devices: ReadonlySet<string> }): string | undefined {
  if (e.object_id === null) return undefined;
  if (e.kind === 'device') return live.devices.has(e.object_id) ? href('device', org, e.object_id) : undefined;
  if (e.kind === 'security_group') return href('security-groups', org);
  if (e.kind === 'organization') return href('settings', org);
  if (e.kind === 'token' || e.kind === 'registration_key') return href('credentials', org);
  return undefined;
}

/**
 * The organization's audit log: history newest first, filtered by actor,
 * object (by name: a device's hostname or a group's or the organization's
 * name, resolved here to its id) and kind and action, each entry with what
 * changed before and after, linked to its object. Pages of PAGE entries,
 * more on demand.
 */
export function AuditView(props: { org: string }): JSX.Element {
  const client = useClient();
  const devices = useInformerItems('device').items;
  const groups = useInformerItems('security-group').items;
  const orgs = useInformerItems('organization').items;
  const [kind, setKind] = useState<AuditKind | ''>('');
  const [action, setAction] = useState<AuditAction | ''>('');
  const [actor, setActor] = useState('');
  const [object, setObject] = useState('');
  const [applied, setApplied] = useState<{ kind: string; action: string; actor: string; object: string }>({ kind: '', action: '', actor: '', object: '' });
  const [entries, setEntries] = useState<AuditEntry[]>([]);
  const [next, setNext] = useState<string | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const [loading, setLoading] = useState(false);
  const liveDevices = useMemo(() => new Set(devices.map((d) => d.id)), [devices]);

  // A name, as ctl audit --object takes one; an id passes through. Several matches: the first kind's, unless a kind is chosen.
  const objectId = (text: string): string | undefined | null => {
    const t = text.trim();
    if (t === '') return undefined;
    const byName = [
      ...devices.filter((d) => d.hostname === t).map((d) => ({ kind: 'device', id: d.id })),
      ...groups.filter((g) => g.name === t).map((g) => ({ kind: 'security_group', id: g.id })),
      ...orgs.filter((o) => o.name === t).map((o) => ({ kind: 'organization', id: o.id })),
    ].filter((m) => applied.kind === '' || m.kind === applied.kind);
    if (byName.length > 0) return byName[0]!.id;
    return /^[0-9a-f-]{36}$/i.test(t) ? t : null;
  };
  const resolved = objectId(applied.object);
  const filter: AuditFilter = {
    limit: PAGE,
    ...(applied.kind ? { kind: applied.kind as AuditKind } : {}),
    ...(applied.action ? { action: applied.action as AuditAction } : {}),
    ...(applied.actor.trim() ? { actor: applied.actor.trim() } : {}),
    ...(resolved ? { object: resolved } : {}),
  };
  const key = JSON.stringify(filter);
  const load = async (after: string | undefined, signal?: AbortSignal): Promise<void> => {
    setLoading(true);
    try {
      const page = await client.audit.page(props.org, filter, after, { signal });
      setEntries((prev) => (after === undefined ? page.items : [...prev, ...page.items]));
      setNext(page.next);
      setError(undefined);
    } catch (err) {
      if (!signal?.aborted) setError(err);
    } finally {
      setLoading(false);
    }
  };
  useEffect(() => {
    if (resolved === null) {
      setEntries([]);
      setNext(undefined);
      return;
    }
    const ac = new AbortController();
    void load(undefined, ac.signal);
    return () => ac.abort();
  }, [client, props.org, key, resolved === null]);

  const denied = error instanceof FleetplaneError && error.status === 403;
  return (
    <main>
      <h1>Audit log</h1>
      <form
        class="toolbar panel"
        aria-label="Filter the audit log"
        onSubmit={(e) => {
          e.preventDefault();
          setApplied({ kind, action, actor, object });
        }}
      >
        <div>
          <label for="audit-object">Object (name or id)</label>
          <input id="audit-object" data-testid="audit-object" value={object} placeholder="web-1" onInput={(e) => setObject(e.currentTarget.value)} />
        </div>
        <div>
          <label for="audit-actor">Actor (type or type:id)</label>
          <input id="audit-actor" data-testid="audit-actor" value={actor} placeholder="admin" onInput={(e) => setActor(e.currentTarget.value)} />
        </div>
        <div>
          <label for="audit-kind">Kind</label>
          <select id="audit-kind" data-testid="audit-kind" value={kind} onChange={(e) => setKind(e.currentTarget.value as AuditKind | '')}>
            <option value="">any</option>
            {AUDIT_KINDS.map((k) => (
              <option key={k} value={k}>{k.replace('_', ' ')}</option>
            ))}
          </select>
        </div>
        <div>
          <label for="audit-action">Action</label>
          <select id="audit-action" data-testid="audit-action" value={action} onChange={(e) => setAction(e.currentTarget.value as AuditAction | '')}>
            <option value="">any</option>
            {AUDIT_ACTIONS.map((a) => (
              <option key={a} value={a}>{a}</option>
            ))}
          </select>
        </div>
        <button type="submit" class="primary" data-testid="audit-apply">Show</button>
      </form>
      {resolved === null ? (
        <div class="banner warn" role="status" data-testid="audit-unknown-object">
          No device, security group or organization here is named “{applied.object.trim()}”: a deleted object is found by its id.
        </div>
      ) : null}
      {error ? <ErrorState error={error} title={denied ? 'This credential may not read the audit log' : 'The audit log could not be read'} /> : null}
      {!error && resolved !== null && entries.length === 0 && !loading ? <EmptyState title="No entries match" /> : null}
      {entries.length > 0 ? (
        <table class="panel" data-testid="audit-table">
          <thead>
            <tr><th scope="col">Time</th><th scope="col">Actor</th><th scope="col">Action</th><th scope="col">Kind</th><th scope="col">Object</th><th scope="col">What changed</th></tr>
          </thead>
          <tbody>
            {entries.map((e) => {
              const link = objectHref(props.org, e, { devices: liveDevices });
              const name = e.object_name ?? e.object_id ?? '—';
              const changes = auditChanges(e.details);
              return (
                <tr key={e.id} data-testid="audit-row" data-kind={e.kind} data-action={e.action}>
                  <td><time dateTime={e.at}>{new Date(e.at).toLocaleString()}</time></td>
                  <td>{actorText(e)}</td>
                  <td>{e.action}</td>
                  <td>{e.kind.replace('_', ' ')}</td>
                  <td data-testid="audit-object-name">{link ? <a href={link}>{name}</a> : name}</td>
                  <td data-testid="audit-changes">
                    {changes.length > 0 ? (
                      <ul class="changes">
                        {changes.map(([field, c]) => (
                          <li key={field}>
                            <code>{field}</code>: {shown(c.from)} → {shown(c.to)}
                          </li>
                        ))}
                      </ul>
                    ) : Array.isArray(e.details['fields']) ? (
                      <span class="muted">{(e.details['fields'] as unknown[]).join(', ')}</span>
                    ) : null}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      ) : null}
      {next !== undefined ? (
        <button type="button" data-testid="audit-more" disabled={loading} onClick={() => void load(next)}>
          {loading ? 'Loading…' : 'Older entries'}
        </button>
      ) : null}
    </main>
  );
}
