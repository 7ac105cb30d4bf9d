import { useEffect, useState } from 'preact/hooks';
import { WATCH_KINDS } from '../../protocol/wire.js';
import type { WatchKind } from '../../client/index.js';
import type { LiveInformers } from './page-link.js';
import { useLive } from './context.js';

/** Events kept in the page: older ones fall off the end. */
export const MAX_EVENTS = 500;

export interface FeedEvent {
  key: string;
  kind: WatchKind;
  type: 'created' | 'updated' | 'deleted';
  id: string;
  name: string;
  revision: number;
  at: number;
}

function nameOf(o: { id: string } & Partial<Record<'hostname' | 'description' | 'name', unknown>>): string {
  for (const k of ['hostname', 'name', 'description'] as const) {
    const v = o[k];
    if (typeof v === 'string' && v !== '') return v;
  }
  return o.id;
}

/**
 * The organization's changes since the page opened, newest first, at most
 * MAX_EVENTS: recorded from the shell's informers, so the events view shows
 * what happened before it was opened too.
 */
export class EventFeed {
  #events: FeedEvent[] = [];
  readonly #listeners = new Set<() => void>();
  readonly #offs: (() => void)[] = [];

  constructor(informers: LiveInformers) {
    for (const kind of WATCH_KINDS) {
      const inf = informers.informer(kind);
      const push = (type: FeedEvent['type'], o: { id: string; revision: number }): void => {
        // The initial list is the state, not news.
        if (!inf.hasSynced()) return;
        this.#events = [{ key: `${kind}:${o.id}:${o.revision}:${type}`, kind, type, id: o.id, name: nameOf(o), revision: o.revision, at: Date.now() }, ...this.#events].slice(0, MAX_EVENTS);
        for (const l of this.#listeners) l();
      };
      this.#offs.push(inf.onAdd((o) => push('created', o)), inf.onUpdate((_old, o) => push('updated', o)), inf.onDelete((o) => push('deleted', o)));
    }
  }

  get events(): readonly FeedEvent[] {
    return this.#events;
  }

  subscribe(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  close(): void {
    for (const off of this.#offs) off();
    this.#listeners.clear();
  }
}

export function useEventFeed(): readonly FeedEvent[] {
  const feed = useLive().events;
  const [events, setEvents] = useState<readonly FeedEvent[]>(feed?.events ?? []);
  useEffect(() => {
    if (!feed) return;
    setEvents(feed.events);
    return feed.subscribe(() => setEvents(feed.events));
  }, [feed]);
  return events;
}
