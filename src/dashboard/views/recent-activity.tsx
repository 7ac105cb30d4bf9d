import type { JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { Ago } from '../components/ui.js';
import { useEventFeed, type FeedEvent } from '../live/event-feed.js';
import { href } from '../router.js';

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
 * The organization's last RECENT changes since the page opened, newest
 * first (`data-testid="activity-row"`, with `data-kind` and `data-type`):
 * what changed, its kind and name (a link to where it is shown, unless
 * deleted), and how long ago; with links to the events view and the audit
 * log, which has what happened before the page opened and who did it.
 */
export function RecentActivity(props: { org: string }): JSX.Element {
  const events = useEventFeed();
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), 10_000);
    return () => clearInterval(t);
  }, []);
  // A change arriving resets "0 s ago" to now rather than to the last tick.
  const at = Math.max(now, events[0]?.at ?? 0);
  const recent = events.slice(0, RECENT);
  return (
    <section class="panel" aria-labelledby="activity-title" data-testid="activity">
      <div class="toolbar">
        <h2 id="activity-title" style={{ margin: 0 }}>Recent activity</h2>
        <span class="spacer" />
        <a href={href('events', props.org)} data-testid="activity-events-link">All events</a>
        <a href={href('audit', props.org)} data-testid="activity-audit-link">Audit log</a>
      </div>
      {recent.length === 0 ? (
        <p class="muted" role="status" data-testid="activity-empty">No change since this page opened: the audit log has the earlier ones.</p>
      ) : (
        <ul class="activity">
          {recent.map((e) => (
            <li key={e.key} data-testid="activity-row" data-kind={e.kind} data-type={e.type} data-id={e.id}>
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
