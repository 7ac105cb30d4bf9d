import { WATCH_KINDS, type Convergence, type KindValue, type StatusSummary, type WatchKind } from '../../protocol/wire.js';
import type { HubMessage, TabMessage } from './page-messages.js';

/** A kind's live objects as the views read them (what a tab holds of the shared page stream). */
export interface ViewInformer<K extends WatchKind> {
  list(): KindValue[K][];
  get(id: string): KindValue[K] | undefined;
  /** The kind was listed whole at least once. */
  hasSynced(): boolean;
  /** Resolves once synced; rejects when `signal` aborts first. */
  waitForSync(signal?: AbortSignal): Promise<void>;
  onAdd(handler: (object: KindValue[K]) => void): () => void;
  onUpdate(handler: (old: KindValue[K], object: KindValue[K]) => void): () => void;
  onDelete(handler: (object: KindValue[K]) => void): () => void;
  /** Any change, the snapshot a tab is sent when it joins included. */
  onChange(handler: () => void): () => void;
}

/** An organization's live objects, one informer per kind. */
export interface LiveInformers {
  informer<K extends WatchKind>(kind: K): ViewInformer<K>;
}

/** Where a tab's messages go and come from: a SharedWorker's port, or the hub in the page. */
export interface HubChannel {
  post(m: TabMessage): void;
  onMessage(handler: (m: HubMessage) => void): () => void;
}

type Handlers<K extends WatchKind> = {
  add: Set<(o: KindValue[K]) => void>;
  update: Set<(old: KindValue[K], o: KindValue[K]) => void>;
  delete: Set<(o: KindValue[K]) => void>;
  change: Set<() => void>;
  synced: Set<() => void>;
};

class KindView<K extends WatchKind> implements ViewInformer<K> {
  readonly objects = new Map<string, KindValue[K]>();
  synced = false;
  readonly h: Handlers<K> = { add: new Set(), update: new Set(), delete: new Set(), change: new Set(), synced: new Set() };

  list(): KindValue[K][] {
    return [...this.objects.values()];
  }

  get(id: string): KindValue[K] | undefined {
    return this.objects.get(id);
  }

  hasSynced(): boolean {
    return this.synced;
  }

  waitForSync(signal?: AbortSignal): Promise<void> {
    if (this.synced) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const done = (): void => {
        this.h.synced.delete(done);
        signal?.removeEventListener('abort', aborted);
        resolve();
      };
      const aborted = (): void => {
        this.h.synced.delete(done);
        reject(signal?.reason);
      };
      this.h.synced.add(done);
      signal?.addEventListener('abort', aborted, { once: true });
    });
  }

  onAdd(handler: (o: KindValue[K]) => void): () => void {
    this.h.add.add(handler);
    return () => this.h.add.delete(handler);
  }

  onUpdate(handler: (old: KindValue[K], o: KindValue[K]) => void): () => void {
    this.h.update.add(handler);
    return () => this.h.update.delete(handler);
  }

  onDelete(handler: (o: KindValue[K]) => void): () => void {
    this.h.delete.add(handler);
    return () => this.h.delete.delete(handler);
  }

  onChange(handler: () => void): () => void {
    this.h.change.add(handler);
    return () => this.h.change.delete(handler);
  }

  markSynced(): void {
    if (this.synced) return;
    this.synced = true;
    for (const f of [...this.h.synced]) f();
  }

  changed(): void {
    for (const f of this.h.change) f();
  }
}

/**
 * One organization as a tab sees it: the objects, convergence and statuses
 * of the page stream the hub holds for every tab (docs/protocol.md "Page
 * stream"). Handlers are called in the stream's order.
 */
export class PageLink implements LiveInformers {
  readonly #kinds = new Map<WatchKind, KindView<WatchKind>>();
  readonly #statuses = new Map<string, StatusSummary>();
  readonly #convergenceHandlers = new Set<(v: Convergence) => void>();
  readonly #statusHandlers = new Set<() => void>();
  readonly #failedHandlers = new Set<(message: string) => void>();
  readonly #connectionHandlers = new Set<(ok: boolean) => void>();
  readonly #off: () => void;
  #convergence: Convergence | undefined;
  #statusesVersion = 0;

  constructor(
    private readonly channel: HubChannel,
    readonly org: string,
  ) {
    for (const kind of WATCH_KINDS) this.#kinds.set(kind, new KindView<WatchKind>());
    this.#off = channel.onMessage((m) => {
      if (m.org === org) this.#receive(m);
    });
    channel.post({ t: 'follow', org });
  }

  informer<K extends WatchKind>(kind: K): ViewInformer<K> {
    // One view per kind under its own kind.
    return this.#kinds.get(kind) as unknown as ViewInformer<K>;
  }

  get convergence(): Convergence | undefined {
    return this.#convergence;
  }

  /** Every device's status summary the stream brought: one map, changed in place (`statusesVersion` tells each change). */
  get statuses(): ReadonlyMap<string, StatusSummary> {
    return this.#statuses;
  }

  /** Increases with every statuses line. */
  get statusesVersion(): number {
    return this.#statusesVersion;
  }

  onConvergence(handler: (v: Convergence) => void): () => void {
    this.#convergenceHandlers.add(handler);
    return () => this.#convergenceHandlers.delete(handler);
  }

  onStatuses(handler: () => void): () => void {
    this.#statusHandlers.add(handler);
    return () => this.#statusHandlers.delete(handler);
  }

  onFailed(handler: (message: string) => void): () => void {
    this.#failedHandlers.add(handler);
    return () => this.#failedHandlers.delete(handler);
  }

  /** The stream lost the server (false) or reached it again (true). */
  onConnection(handler: (ok: boolean) => void): () => void {
    this.#connectionHandlers.add(handler);
    return () => this.#connectionHandlers.delete(handler);
  }

  close(): void {
    this.#off();
    this.channel.post({ t: 'leave', org: this.org });
  }

  #kind(kind: WatchKind): KindView<WatchKind> {
    const v = this.#kinds.get(kind);
    if (!v) throw new Error(`no view of kind ${kind}`);
    return v;
  }

  #receive(m: HubMessage): void {
    switch (m.t) {
      case 'snapshot': {
        for (const kind of WATCH_KINDS) {
          const v = this.#kind(kind);
          v.objects.clear();
          for (const o of m.kinds[kind].items) v.objects.set(o.id, o);
          if (m.kinds[kind].synced) v.markSynced();
          v.changed();
        }
        this.#setStatuses(true, m.statuses, []);
        if (m.convergence) this.#setConvergence(m.convergence);
        if (m.failed !== undefined) this.#fail(m.failed);
        return;
      }
      case 'add':
      case 'update': {
        const v = this.#kind(m.kind);
        const old = v.objects.get(m.object.id);
        v.objects.set(m.object.id, m.object);
        if (old && m.t === 'update') for (const f of v.h.update) f(old, m.object);
        else for (const f of v.h.add) f(m.object);
        v.changed();
        return;
      }
      case 'delete': {
        const v = this.#kind(m.kind);
        v.objects.delete(m.object.id);
        for (const f of v.h.delete) f(m.object);
        v.changed();
        return;
      }
      case 'synced': {
        const v = this.#kind(m.kind);
        v.markSynced();
        v.changed();
        return;
      }
      case 'convergence':
        this.#setConvergence(m.value);
        return;
      case 'statuses':
        this.#setStatuses(m.reset, m.items, m.removed);
        return;
      case 'failed':
        this.#fail(m.message);
        return;
      case 'connection':
        for (const f of this.#connectionHandlers) f(m.ok);
        return;
    }
  }

  #setConvergence(v: Convergence): void {
    this.#convergence = v;
    for (const f of this.#convergenceHandlers) f(v);
  }

  #setStatuses(reset: boolean, items: readonly StatusSummary[], removed: readonly string[]): void {
    if (reset) this.#statuses.clear();
    for (const s of items) this.#statuses.set(s.id, s);
    for (const id of removed) this.#statuses.delete(id);
    this.#statusesVersion++;
    for (const f of this.#statusHandlers) f();
  }

  #fail(message: string): void {
    for (const f of this.#failedHandlers) f(message);
  }
}
