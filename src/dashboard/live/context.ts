import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import type { Convergence, FleetplaneClient, SharedInformers } from '../../client/index.js';
import type { EventFeed } from './event-feed.js';

/** What every view gets from the shell: the page's client, and the selected organization's informers (one watch stream). */
export interface Live {
  client: FleetplaneClient;
  /** Undefined outside an organization's views. */
  informers: SharedInformers | undefined;
  /** The selected organization's changes since the page opened; undefined outside an organization's views. */
  events: EventFeed | undefined;
  /** The selected organization's convergence; undefined outside an organization's views. */
  convergence: TrackedConvergence | undefined;
}

/** An organization's convergence as the shell follows it, with how long the last change took to converge. */
export interface TrackedConvergence {
  value: Convergence | undefined;
  error: Error | undefined;
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

export function useInformers(): SharedInformers {
  const i = useLive().informers;
  if (!i) throw new Error('an organization view rendered without its informers');
  return i;
}

export function useTracked(): TrackedConvergence {
  const c = useLive().convergence;
  if (!c) throw new Error('an organization view rendered without its convergence');
  return c;
}
