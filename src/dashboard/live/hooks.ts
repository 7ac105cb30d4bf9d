import { useEffect, useRef, useState } from 'preact/hooks';
import { AuthError, type Device, type DeviceStatus, type KindValue, type Organization, type WatchKind } from '../../client/index.js';
import { useClient, useInformers, useTracked, type TrackedConvergence } from './context.js';

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
    const offs = [inf.onAdd(schedule), inf.onUpdate(schedule), inf.onDelete(schedule)];
    const ac = new AbortController();
    inf.waitForSync(ac.signal).then(schedule, () => undefined);
    schedule();
    return () => {
      ac.abort();
      cancelAnimationFrame(frame);
      for (const off of offs) off();
    };
  }, [informers, kind]);
  return state;
}

/** The organization object, live from the watch stream; undefined until the stream has listed it. */
export function useOrganization(org: string): Organization | undefined {
  return useInformerItems('organization').items.find((o) => o.id === org);
}

/** The organization's convergence, followed live by the shell (one stream for every view; at most one update per 100 ms). */
export function useConvergence(_org: string): TrackedConvergence {
  return useTracked();
}

/** Least time between two reads of every device's status. */
const STATUS_READ_SPACING_MS = 2_000;

/**
 * Every device's observed status (once `enabled`), read again when the organization's
 * convergence changes (the server wakes that stream on status batches), at
 * most once per STATUS_READ_SPACING_MS: live without a timer.
 */
export function useDeviceStatuses(org: string, enabled = true): { statuses: ReadonlyMap<string, DeviceStatus>; error: Error | undefined } {
  const client = useClient();
  const { value } = useConvergence(org);
  const [statuses, setStatuses] = useState<ReadonlyMap<string, DeviceStatus>>(new Map());
  const [error, setError] = useState<Error | undefined>(undefined);
  const kick = useRef<() => void>(() => undefined);
  useEffect(() => {
    if (!enabled) return;
    const ac = new AbortController();
    let at = Number.NEGATIVE_INFINITY;
    let timer = 0;
    let reading = false;
    let again = false;
    const read = async (): Promise<void> => {
      reading = true;
      at = performance.now();
      try {
        const next = new Map<string, DeviceStatus>();
        for await (const d of client.devices.items(org, { signal: ac.signal })) if ('status' in d) next.set(d.id, (d as Device).status);
        if (!ac.signal.aborted) {
          setStatuses(next);
          setError(undefined);
        }
      } catch (err) {
        // A 401 ends the session (the shell shows it); anything else shows here and the next change reads again.
        if (!ac.signal.aborted && !(err instanceof AuthError)) setError(err instanceof Error ? err : new Error(String(err)));
      } finally {
        reading = false;
        if (again && !ac.signal.aborted) {
          again = false;
          schedule();
        }
      }
    };
    const schedule = (): void => {
      if (reading) {
        again = true;
        return;
      }
      if (timer !== 0) return;
      timer = window.setTimeout(() => {
        timer = 0;
        void read();
      }, Math.max(0, at + STATUS_READ_SPACING_MS - performance.now()));
    };
    kick.current = schedule;
    schedule();
    return () => {
      ac.abort();
      clearTimeout(timer);
      kick.current = () => undefined;
    };
  }, [client, org, enabled]);
  // The stream repeats an unchanged value after each bookmark interval: only a change reads again.
  const changed = value === undefined ? '' : JSON.stringify(value);
  useEffect(() => kick.current(), [changed]);
  return { statuses, error };
}
