import { useEffect, useState } from 'preact/hooks';
import type { TrackedConvergence } from './context.js';
import type { PageLink } from './page-link.js';

const EMPTY: TrackedConvergence = { value: undefined, lastMs: undefined, pendingSince: undefined };

/**
 * Follows an organization's convergence on its page stream and times each
 * change: from the moment the head revision rose to the moment every device
 * reported it.
 */
export function useConvergenceTracker(page: PageLink | undefined): TrackedConvergence | undefined {
  const [state, setState] = useState<TrackedConvergence>(EMPTY);
  useEffect(() => {
    setState(page?.convergence ? { ...EMPTY, value: page.convergence } : EMPTY);
    if (!page) return;
    let revision = page.convergence?.revision;
    let since: number | undefined;
    let lastMs: number | undefined;
    return page.onConvergence((value) => {
      if (revision !== undefined && value.revision > revision && since === undefined) since = performance.now();
      revision = value.revision;
      if (since !== undefined && value.at_head === value.devices) {
        lastMs = performance.now() - since;
        since = undefined;
      }
      setState({ value, lastMs, pendingSince: since });
    });
  }, [page]);
  return page ? state : undefined;
}
