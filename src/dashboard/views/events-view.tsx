import type { JSX } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { AuthError, FleetplaneError } from '../../client/index.js';
import { useClient } from '../live/context.js';
import { MAX_EVENTS, useEventFeed } from '../live/event-feed.js';

/** The organization's live change feed, newest first, with who made each change from the audit log. */
export function EventsView(props: { org: string }): JSX.Element {
  const client = useClient();
  const events = useEventFeed();
  const [actors, setActors] = useState<ReadonlyMap<number, string>>(new Map());
  const [auditNote, setAuditNote] = useState<string | undefined>(undefined);
  const highest = useRef(0);
  // New revisions arrived: one audit read for the entries after the last one asked for (not on a timer).
  const newest = events[0]?.revision ?? 0;
  useEffect(() => {
    if (newest === 0 || auditNote !== undefined) return;
    const from = highest.current === 0 ? Math.min(...events.map((e) => e.revision)) - 1 : highest.current;
    highest.current = newest;
    const ac = new AbortController();
    void (async () => {
      try {
        const page = await client.audit.page(props.org, { gtRevision: from }, undefined, { signal: ac.signal });
        setActors((prev) => {
          const next = new Map(prev);
          for (const e of page.items) if (e.revision !== null) next.set(e.revision, e.actor.id === null ? e.actor.type : `${e.actor.type} ${e.actor.id.slice(0, 8)}`);
          return next;
        });
      } catch (err) {
        // A 401 signs the page out elsewhere; a 403 (an AuthError too) is this credential's role, said here.
        if (ac.signal.aborted || (err instanceof AuthError && err.status !== 403)) return;
        setAuditNote(err instanceof FleetplaneError && err.status === 403 ? 'this credential may not read the audit log: who made each change is not shown' : `the audit log could not be read: ${String(err)}`);
      }
    })();
  }, [newest]);
  return (
    <main>
      <h1>Events</h1>
      <p class="muted">Changes as they happen, newest first (the last {MAX_EVENTS} since this page was opened).</p>
      {auditNote ? <div class="banner warn" role="status" data-testid="events-audit-note">{auditNote}</div> : null}
      {events.length === 0 ? (
        <div class="panel" role="status">No change since this page opened.</div>
      ) : (
        <table class="panel">
          <thead>
            <tr><th scope="col">Time</th><th scope="col">Change</th><th scope="col">Kind</th><th scope="col">Object</th><th scope="col">Revision</th><th scope="col">By</th></tr>
          </thead>
          <tbody>
            {events.map((e) => (
              <tr key={e.key} data-testid="events-row" data-kind={e.kind} data-type={e.type}>
                <td>{new Date(e.at).toLocaleTimeString()}</td>
                <td>{e.type}</td>
                <td>{e.kind}</td>
                <td>{e.name}</td>
                <td>{e.revision}</td>
                <td data-testid="events-actor">{actors.get(e.revision) ?? '—'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </main>
  );
}
