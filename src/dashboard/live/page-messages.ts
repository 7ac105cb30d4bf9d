import type { Convergence, KindValue, StatusSummary, WatchKind } from '../../protocol/wire.js';

/** One kind's objects as a tab first receives them. */
export interface KindSnapshot<K extends WatchKind = WatchKind> {
  items: KindValue[K][];
  synced: boolean;
}

/**
 * What the page hub tells a tab about one organization (one message per
 * event, structured-cloned through a MessagePort or handed over in-page).
 * A tab gets `snapshot` first, then the rest in the stream's order.
 */
export type HubMessage =
  | {
      t: 'snapshot';
      org: string;
      kinds: { [K in WatchKind]: KindSnapshot<K> };
      convergence: Convergence | undefined;
      statuses: StatusSummary[];
      failed: string | undefined;
    }
  | { t: 'add'; org: string; kind: WatchKind; object: KindValue[WatchKind] }
  | { t: 'update'; org: string; kind: WatchKind; object: KindValue[WatchKind] }
  | { t: 'delete'; org: string; kind: WatchKind; object: KindValue[WatchKind] }
  | { t: 'synced'; org: string; kind: WatchKind }
  | { t: 'convergence'; org: string; value: Convergence }
  | { t: 'statuses'; org: string; reset: boolean; items: StatusSummary[]; removed: string[] }
  /** Whether the stream reaches the server: false while it retries after a connection failed, true once it is open again. */
  | { t: 'connection'; org: string; ok: boolean }
  /** The stream stopped for good (401, 403, 404): the tab asks the server whether its session ended. */
  | { t: 'failed'; org: string; message: string };

/**
 * What a tab asks of the hub. `hello` names a Web Lock the tab holds for
 * its life: the worker waits for that lock to learn that the tab is gone
 * (a MessagePort says nothing when its page closes).
 */
export type TabMessage = { t: 'hello'; lock: string } | { t: 'follow'; org: string } | { t: 'leave'; org: string };
