import { useEffect, useState } from 'preact/hooks';
import type { KindValue, Organization, StatusSummary, WatchKind } from '../../protocol/wire.js';
import { useInformers, usePage, useTracked, type TrackedConvergence } from './context.js';

/** A kind's live objects: re-rendered at most once per animation frame however many events arrive. */
export interface LiveItems<K extends WatchKind> {
  items: readonly KindValue[K][];
  synced: boolean;
}

export function useInformerItems<K extends WatchKind>(kind: K): LiveItems<K> {
  const informers = useInformers();
  const [state, setState] = useState<LiveItems<K>>(() => {
    const inf = informers.informer(kind);
    return { items: inf.list(), synced: inf.hasSynced() };
  });
  useEffect(() => {
    const inf = informers.informer(kind);
    let frame = 0;
    const schedule = (): void => {
      if (frame !== 0) return;
      frame = requestAnimationFrame(() => {
        frame = 0;
        setState({ items: inf.list(), synced: inf.hasSynced() });
      });
    };
    const off = inf.onChange(schedule);
    schedule();
    return () => {
      cancelAnimationFrame(frame);
      off();
    };
  }, [informers, kind]);
  return state;
}

/** The organization object, live from the watch stream; undefined until the stream has listed it. */
export function useOrganization(org: string): Organization | undefined {
  return useInformerItems('organization').items.find((o) => o.id === org);
}

/** The organization's convergence, from the page stream (at most one update per 100 ms). */
export function useConvergence(_org: string): TrackedConvergence {
  return useTracked();
}

/**
 * Every device's observed status, live from the page stream's `statuses`
 * lines (a reset, then deltas at most once a second): no list is read. A
 * new map at most once per animation frame, so views may compare by identity.
 */
export function useDeviceStatuses(): ReadonlyMap<string, StatusSummary> {
  const page = usePage();
  const [statuses, setStatuses] = useState<ReadonlyMap<string, StatusSummary>>(() => new Map(page.statuses));
  useEffect(() => {
    let frame = 0;
    const schedule = (): void => {
      if (frame !== 0) return;
      frame = requestAnimationFrame(() => {
        frame = 0;
        setStatuses(new Map(page.statuses));
      });
    };
    schedule();
    const off = page.onStatuses(schedule);
    return () => {
      off();
      cancelAnimationFrame(frame);
    };
  }, [page]);
  return statuses;
}
