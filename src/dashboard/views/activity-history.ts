import { useEffect, useState } from 'preact/hooks';
import { AuthError, FleetplaneError } from '../../client/index.js';
import type { AuditAction, AuditEntry, AuditKind, WatchKind } from '../../protocol/wire.js';
import { useClient } from '../live/context.js';
import type { FeedEvent } from '../live/event-feed.js';

/** The kinds whose changes take a revision and are followed live; their audit entries as the feed names them. */
const KINDS: Partial<Record<AuditKind, WatchKind>> = { organization: 'organization', device: 'device', security_group: 'security-group' };
const TYPES: Partial<Record<AuditAction, FeedEvent['type']>> = { create: 'created', update: 'updated', approve: 'updated', delete: 'deleted' };

/** An audit entry as a change of the feed; undefined for one of another kind, or that took no revision. */
export function changeOf(e: AuditEntry): FeedEvent | undefined {
  const kind = KINDS[e.kind];
  const type = TYPES[e.action];
  if (kind === undefined || type === undefined || e.revision === null || e.object_id === null) return undefined;
  return { key: `audit:${e.id}`, kind, type, id: e.object_id, name: e.object_name ?? e.object_id, revision: e.revision, at: Date.parse(e.at) };
}

/** What the audit log said of the changes before the page followed them. */
export type ActivityHistory =
  | { readonly state: 'reading' }
  | { readonly state: 'read'; readonly changes: readonly FeedEvent[] }
  /** The credential may not read the audit log (or it could not be read): the live changes only, and why. */
  | { readonly state: 'unread'; readonly why: string };

/**
 * The organization's changes at revisions `head - count + 1` to `head`,
 * newest first, read once from its audit log (one page) when the view
 * opens: what happened before the page followed the changes live.
 */
export function useActivityHistory(org: string, head: number, count: number): ActivityHistory {
  const client = useClient();
  const [history, setHistory] = useState<ActivityHistory>({ state: 'reading' });
  useEffect(() => {
    setHistory({ state: 'reading' });
    const ac = new AbortController();
    // The head when the view opened: later changes come live, not from here.
    const upTo = head;
    client.audit.page(org, { gtRevision: Math.max(0, upTo - count), limit: 100 }, undefined, { signal: ac.signal }).then(
      (page) => {
        const changes = page.items.map(changeOf).filter((c): c is FeedEvent => c !== undefined && c.revision <= upTo);
        setHistory({ state: 'read', changes: changes.reverse() });
      },
      (err: unknown) => {
        if (ac.signal.aborted) return;
        if (err instanceof FleetplaneError && err.status === 403) return setHistory({ state: 'unread', why: 'this credential may not read the audit log' });
        // A session that ended (401) is the frame's business: it signs the page out.
        if (err instanceof AuthError) return;
        setHistory({ state: 'unread', why: 'the audit log could not be read' });
      },
    );
    return () => ac.abort();
  }, [client, org]);
  return history;
}

/** One change seen both live and in the history: created and deleted once per object, updated once per revision. */
function sameChange(a: FeedEvent, b: FeedEvent): boolean {
  return a.kind === b.kind && a.id === b.id && a.type === b.type && (a.type !== 'updated' || a.revision === b.revision);
}

/**
 * The `count` newest changes: those seen live (newest first), then the
 * history's not seen live, which are older (the history ends where the
 * live changes begin, give or take the changes made while both started).
 */
export function latestChanges(live: readonly FeedEvent[], history: readonly FeedEvent[], count: number): FeedEvent[] {
  const older = history.filter((h) => !live.some((l) => sameChange(l, h)));
  return [...live, ...older].slice(0, count);
}
