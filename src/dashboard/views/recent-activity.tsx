import type { JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { Ago } from '../components/ui.js';
import { useEventFeed, type FeedEvent } from '../live/event-feed.js';
import { href } from '../router.js';
import { latestChanges, useActivityHistory } from './activity-history.js';

/** Changes shown: the rest are in the events view. */
export const RECENT = 10;

const KIND_WORDS: Readonly<Record<FeedEvent['kind'], string>> = {
  device: 'device',
  'security-group': 'security group',
  organization: 'organization',
};

/** Where an object of the feed is shown. */
function objectHref(org: string, e: FeedEvent): string {
  if (e.kind === 'device') return href('device', org, e.id);
  if (e.kind === 'security-group') return href('security-groups', org);
  return href('settings', org);
}

/**
 * The organization's last RECENT changes, newest first
 * (`data-testid="activity-row"`, with `data-kind`, `data-type` and
 * `data-revision`): what changed, its kind and name (a link to where it is
 * shown, unless deleted), and how long ago. Those before the page followed
 * them come from the audit log, read once as the view opens (`head`: the
 * head revision then); later ones live. A credential that may not read the
 * audit log sees the live ones and why (`activity-history-note`). Links to
 * the events view and the audit log, which has who made each change.
 */
export function RecentActivity(props: { org: string; head: number }): JSX.Element {
  const live = useEventFeed();
  const history = useActivityHistory(props.org, props.head, RECENT);
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), 10_000);
    return () => clearInterval(t);
  }, []);
  // A change arriving resets "0 s ago" to now rather than to the last tick.
  const at = Math.max(now, live[0]?.at ?? 0);
  const recent = latestChanges(live, history.state === 'read' ? history.changes : [], RECENT);
  return (
    <section class="panel" aria-labelledby="activity-title" data-testid="activity">
      <div class="toolbar">
        <h2 id="activity-title" style={{ margin: 0 }}>Recent activity</h2>
        <span class="spacer" />
        <a href={href('events', props.org)} data-testid="activity-events-link">All events</a>
        <a href={href('audit', props.org)} data-testid="activity-audit-link">Audit log</a>
      </div>
      {history.state === 'unread' ? (
        <p class="muted" data-testid="activity-history-note">
          Changes since this page opened only: {history.why}.
        </p>
      ) : null}
      {recent.length === 0 ? (
        <p class="muted" role="status" data-testid={history.state === 'reading' ? 'activity-reading' : 'activity-empty'}>
          {history.state === 'reading' ? 'Reading the latest changes…' : 'No change yet.'}
        </p>
      ) : (
        <ul class="activity">
          {recent.map((e) => (
            <li key={e.key} data-testid="activity-row" data-kind={e.kind} data-type={e.type} data-id={e.id} data-revision={e.revision}>
              <span>{e.type}</span>
              <span class="muted">{KIND_WORDS[e.kind]}</span>
              {e.type === 'deleted' ? <span data-testid="activity-name">{e.name}</span> : <a href={objectHref(props.org, e)} data-testid="activity-name">{e.name}</a>}
              <span class="spacer" />
              <span class="muted">
                revision {e.revision}, <Ago at={new Date(e.at).toISOString()} now={at} />
              </span>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
