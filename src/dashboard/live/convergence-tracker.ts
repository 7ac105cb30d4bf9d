import { useEffect, useState } from 'preact/hooks';
import type { FleetplaneClient } from '../../client/index.js';
import type { TrackedConvergence } from './context.js';

const EMPTY: TrackedConvergence = { value: undefined, error: undefined, lastMs: undefined, pendingSince: undefined };

/**
 * Follows an organization's convergence (the SDK reconnects with backoff) and
 * times each change: from the moment the head revision rose to the moment
 * every device reported it.
 */
export function useConvergenceTracker(client: FleetplaneClient, org: string | undefined): TrackedConvergence | undefined {
  const [state, setState] = useState<TrackedConvergence>(EMPTY);
  useEffect(() => {
    setState(EMPTY);
    if (!org) return;
    const ac = new AbortController();
    let revision: number | undefined;
    let since: number | undefined;
    let lastMs: number | undefined;
    void (async () => {
      try {
        for await (const value of client.organizations.followConvergence(org, { signal: ac.signal })) {
          if (revision !== undefined && value.revision > revision && since === undefined) since = performance.now();
          revision = value.revision;
          if (since !== undefined && value.at_head === value.devices) {
            lastMs = performance.now() - since;
            since = undefined;
          }
          setState({ value, error: undefined, lastMs, pendingSince: since });
        }
      } catch (err) {
        if (!ac.signal.aborted) setState((s) => ({ ...s, error: err instanceof Error ? err : new Error(String(err)) }));
      }
    })();
    return () => ac.abort();
  }, [client, org]);
  return org ? state : undefined;
}
