import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import type { Convergence, FleetplaneClient } from '../../client/index.js';
import type { EventFeed } from './event-feed.js';
import type { LiveInformers, PageLink } from './page-link.js';

/** What every view gets from the shell: the page's client, and the selected organization as the shared page stream brings it. */
export interface Live {
  client: FleetplaneClient;
  /** Undefined outside an organization's views. */
  informers: LiveInformers | undefined;
  /** The selected organization's page stream (objects, convergence, statuses); undefined outside an organization's views. */
  page: PageLink | undefined;
  /** The selected organization's changes since the page opened; undefined outside an organization's views. */
  events: EventFeed | undefined;
  /** The selected organization's convergence; undefined outside an organization's views. */
  convergence: TrackedConvergence | undefined;
}

/** An organization's convergence as the shell follows it, with how long the last change took to converge. */
export interface TrackedConvergence {
  value: Convergence | undefined;
  /** Milliseconds from the head rising to every device at it, for the last change seen since the page opened. */
  lastMs: number | undefined;
  /** A change is converging: since when (performance.now()). */
  pendingSince: number | undefined;
}

export const LiveContext = createContext<Live | undefined>(undefined);

export function useLive(): Live {
  const live = useContext(LiveContext);
  if (!live) throw new Error('a view rendered outside the dashboard shell');
  return live;
}

export function useClient(): FleetplaneClient {
  return useLive().client;
}

export function useInformers(): LiveInformers {
  const i = useLive().informers;
  if (!i) throw new Error('an organization view rendered without its informers');
  return i;
}

export function useTracked(): TrackedConvergence {
  const c = useLive().convergence;
  if (!c) throw new Error('an organization view rendered without its convergence');
  return c;
}

export function usePage(): PageLink {
  const p = useLive().page;
  if (!p) throw new Error('an organization view rendered without its page stream');
  return p;
}
