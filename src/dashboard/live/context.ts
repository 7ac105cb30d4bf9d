import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import type { FleetplaneClient, SharedInformers } from '../../client/index.js';

/** What every view gets from the shell: the page's client, and the selected organization's informers (one watch stream). */
export interface Live {
  client: FleetplaneClient;
  /** Undefined outside an organization's views. */
  informers: SharedInformers | undefined;
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
