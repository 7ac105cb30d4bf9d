import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import type { DeviceObject, DevicePatch } from '../../client/index.js';
import { describeError } from '../components/ui.js';
import { useClient } from '../live/context.js';
import { useEnforcedGroups } from '../live/groups.js';
import { ConfirmAction } from '../components/confirm-action.js';
import { asTag } from '../components/typed-lists.js';

/** Where a bulk action is: how many of the selection are done, and which failed (with why). */
interface Progress {
  what: string;
  done: number;
  total: number;
  failed: { hostname: string; why: string }[];
  finished: boolean;
}

/**
 * Acts on the devices selected in the devices view: set the security group,
 * add a tag, or delete them. One request per device, a few at a time, with
 * progress; what failed is listed by hostname, and the rest goes on.
 */
export function BulkActions(props: { org: string; selected: readonly DeviceObject[]; onClear: () => void }): JSX.Element | null {
  const client = useClient();
  const enforced = useEnforcedGroups(props.org);
  const [group, setGroup] = useState('');
  const [tag, setTag] = useState('');
  const [progress, setProgress] = useState<Progress | undefined>(undefined);
  const busy = progress !== undefined && !progress.finished;

  const run = async (what: string, act: (d: DeviceObject) => Promise<unknown>): Promise<void> => {
    const devices = [...props.selected];
    const state: Progress = { what, done: 0, total: devices.length, failed: [], finished: false };
    setProgress({ ...state });
    // Four at a time: quick for a few hundred devices without queueing the browser's six connections full.
    let next = 0;
    const worker = async (): Promise<void> => {
      for (let i = next++; i < devices.length; i = next++) {
        const d = devices[i]!;
        try {
          await act(d);
        } catch (err) {
          state.failed.push({ hostname: d.hostname, why: describeError(err) });
        }
        state.done++;
        setProgress({ ...state, failed: [...state.failed] });
      }
    };
    await Promise.all([worker(), worker(), worker(), worker()]);
    setProgress({ ...state, failed: [...state.failed], finished: true });
    if (state.failed.length === 0) props.onClear();
  };
  const patchAll = (what: string, body: (d: DeviceObject) => DevicePatch | undefined): void => {
    void run(what, async (d) => {
      const b = body(d);
      if (b) await client.devices.update(props.org, d.id, b);
    });
  };

  if (props.selected.length === 0 && !progress) return null;
  const n = props.selected.length;
  return (
    <div class="panel" role="region" aria-label="Selected devices" data-testid="bulk-actions">
      <div class="toolbar">
        <strong data-testid="bulk-count">{n} selected</strong>
        {enforced.source === 'objects' ? (
          <>
            <label for="bulk-group">Security group</label>
            <select id="bulk-group" data-testid="bulk-group" value={group} onChange={(e) => setGroup(e.currentTarget.value)} disabled={busy}>
              <option value="">none</option>
              {enforced.groups.map((g) => (
                <option key={g.id} value={g.id}>
                  {g.name ?? (g.description || g.id)}
                </option>
              ))}
            </select>
            <button type="button" data-testid="bulk-group-apply" disabled={busy || n === 0} onClick={() => patchAll('Set the security group', () => ({ security_group_id: group || null }))}>
              Set group
            </button>
          </>
        ) : null}
        <label for="bulk-tag">Tag</label>
        <input id="bulk-tag" data-testid="bulk-tag" value={tag} placeholder="tag:web" onInput={(e) => setTag(e.currentTarget.value)} disabled={busy} />
        <button
          type="button"
          data-testid="bulk-tag-add"
          disabled={busy || n === 0 || tag.trim() === ''}
          onClick={() => {
            const t = asTag(tag);
            patchAll(`Add ${t}`, (d) => ((d.tags ?? []).includes(t) ? undefined : { tags: [...(d.tags ?? []), t] }));
          }}
        >
          Add tag
        </button>
        <ConfirmAction
          testId="bulk-delete"
          opener="Delete…"
          action="Delete"
          disabled={busy || n === 0}
          label="Confirm delete"
          question={`Delete ${n} devices?`}
          onConfirm={() => void run(`Delete ${n} devices`, (d) => client.devices.delete(props.org, d.id))}
        />
        <button type="button" data-testid="bulk-clear" disabled={busy} onClick={() => { setProgress(undefined); props.onClear(); }}>
          Clear selection
        </button>
      </div>
      {progress ? (
        <p role="status" data-testid="bulk-progress" data-finished={String(progress.finished)} class={progress.failed.length > 0 ? 'field-error' : ''}>
          {progress.what}: {progress.done} of {progress.total} done
          {progress.failed.length > 0 ? `, ${progress.failed.length} failed: ${progress.failed.slice(0, 5).map((f) => `${f.hostname} (${f.why})`).join('; ')}` : ''}
          {progress.finished && progress.failed.length === 0 ? '. Saved.' : ''}
        </p>
      ) : null}
    </div>
  );
}
