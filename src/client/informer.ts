import { applyPatch, type KindValue, type PatchValue, type Watch, type WatchKind } from '../protocol/wire.js';
import { PatchBaseError } from './errors.js';
import { ChangeSignal } from './change-signal.js';
import { ObjectCache, type CacheDelta } from './informer-cache.js';
import type { KindState } from './informers-state.js';
import type { InformerStatus } from './stream-state.js';

/**
 * A local, always-converging copy of one kind of an organization, fed by a
 * shared watch stream (see SharedInformers).
 *
 * - `list()`/`get()` read the cache; before `hasSynced()` it holds a partial list.
 * - Handlers run synchronously, in stream order, once per real change: an
 *   event whose revision is not newer than the cached object's (or than what
 *   this informer has already seen of its kind) changes nothing and calls
 *   nothing; a relist after compaction calls them only for real differences.
 *   A handler that throws is reported to the error handlers; the stream goes on.
 * - `changes()` yields once per burst of changes (one slot, coalescing), and
 *   once at the first sync; its first wake-up comes at once if already synced.
 */
export interface Informer<K extends WatchKind> {
  readonly kind: K;
  list(): Array<KindValue[K]>;
  get(id: string): KindValue[K] | undefined;
  /**
   * True once this kind's initial list reached its tail; stays true through
   * reconnects and relists. A seeded informer (SharedInformers.seed) becomes
   * synced when the resumed stream confirms it: its tail (after a relist) or
   * the first bookmark (the server's catch-up is done).
   */
  hasSynced(): boolean;
  /** Resolves at the first sync; rejects on abort, or when the informers fail or stop first. */
  waitForSync(signal?: AbortSignal): Promise<void>;
  /** The revision this kind's cache is consistent with (its resume point). */
  revision(): number;
  /** The shared stream's status. */
  status(): InformerStatus;
  /** Each returns a function that removes the handler. */
  onAdd(handler: (object: KindValue[K]) => void): () => void;
  onUpdate(handler: (old: KindValue[K], object: KindValue[K]) => void): () => void;
  /** `object` is the last state (the delete event's value, or the cached object when a relist found it gone). */
  onDelete(handler: (object: KindValue[K]) => void): () => void;
  /** Coalesced change notifications; ends on abort or when the informers stop. */
  changes(signal?: AbortSignal): AsyncIterableIterator<void>;
}

/** What an informer needs from the stream that feeds it. */
export interface InformerHost {
  status(): InformerStatus;
  reportHandlerError(error: unknown, kind: WatchKind): void;
}

type Handlers<K extends WatchKind> = {
  add: Set<(object: KindValue[K]) => void>;
  update: Set<(old: KindValue[K], object: KindValue[K]) => void>;
  delete: Set<(object: KindValue[K]) => void>;
};

/** The informer of one kind; the SharedInformers stream drives it through the methods below the public ones. */
export class KindInformer<K extends WatchKind> implements Informer<K> {
  readonly #cache = new ObjectCache<KindValue[K]>();
  readonly #signal = new ChangeSignal();
  readonly #handlers: Handlers<K> = { add: new Set(), update: new Set(), delete: new Set() };
  readonly #waiters = new Set<{ resolve: () => void; reject: (e: unknown) => void }>();
  #revision = 0;
  #atTail = false;
  #synced = false;
  #ended: { error: unknown } | undefined;

  constructor(
    readonly kind: K,
    private readonly host: InformerHost,
  ) {}

  list(): Array<KindValue[K]> {
    return this.#cache.list();
  }
  get(id: string): KindValue[K] | undefined {
    return this.#cache.get(id);
  }
  hasSynced(): boolean {
    return this.#synced;
  }
  revision(): number {
    return this.#revision;
  }
  status(): InformerStatus {
    return this.host.status();
  }

  waitForSync(signal?: AbortSignal): Promise<void> {
    if (this.#synced) return Promise.resolve();
    if (this.#ended) return Promise.reject(this.#ended.error);
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise<void>((resolve, reject) => {
      const onAbort = (): void => {
        this.#waiters.delete(waiter);
        reject(signal?.reason);
      };
      const waiter = {
        resolve: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
        reject: (e: unknown) => {
          signal?.removeEventListener('abort', onAbort);
          reject(e);
        },
      };
      this.#waiters.add(waiter);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  onAdd(handler: (object: KindValue[K]) => void): () => void {
    this.#handlers.add.add(handler);
    return () => this.#handlers.add.delete(handler);
  }
  onUpdate(handler: (old: KindValue[K], object: KindValue[K]) => void): () => void {
    this.#handlers.update.add(handler);
    return () => this.#handlers.update.delete(handler);
  }
  onDelete(handler: (object: KindValue[K]) => void): () => void {
    this.#handlers.delete.add(handler);
    return () => this.#handlers.delete.delete(handler);
  }

  changes(signal?: AbortSignal): AsyncIterableIterator<void> {
    return this.#signal.subscribe(signal, this.#synced);
  }

  // ---- driven by the stream ----

  /** This kind's entry of the watch request: resume where the cache is. */
  watch(asked: { patches: boolean; gzip: boolean }): Watch {
    return { kind: this.kind, gt_revision: this.#revision, at_tail: this.#atTail, ...(asked.patches ? { patches: true } : {}), ...(asked.gzip ? { gzip: true } : {}) };
  }

  /** At its tail and not relisting. */
  get current(): boolean {
    return this.#atTail && !this.#cache.relisting;
  }

  handleChange(object: KindValue[K]): void {
    if (!this.#advance(object.revision)) return;
    this.#emit(this.#cache.applyChange(object));
  }

  /** Throws PatchBaseError when the cache doesn't hold the patch's base: the stream must list again. */
  handlePatch(patch: PatchValue): void {
    if (patch.revision <= this.#revision) return;
    const held = this.#cache.get(patch.id);
    const next = applyPatch(held, patch);
    if (next === undefined) {
      throw new PatchBaseError({
        code: 'invalid_response',
        message: `watch: a patch of ${this.kind} ${patch.id} from revision ${patch.from_revision}, which this client holds ${held ? `at revision ${held.revision}` : 'not at all'}`,
      });
    }
    this.#revision = patch.revision;
    this.#emit(this.#cache.applyChange(next));
  }

  handleDelete(last: KindValue[K]): void {
    if (!this.#advance(last.revision)) return;
    this.#emit(this.#cache.applyDelete(last));
  }

  handleTail(revision: number): void {
    this.#revision = Math.max(this.#revision, revision);
    this.#atTail = true;
    // Deletes for what vanished come only now: before the tail, the listing may still confirm an object.
    for (const delta of this.#cache.endRelist()) this.#emit(delta);
    this.#markSynced();
  }

  /** The whole stream is consistent up to `revision`: a later event at or below it would be stale. */
  handleBookmark(revision: number): void {
    this.#revision = Math.max(this.#revision, revision);
    // Bookmarks flow only once the server has caught the stream up: a seeded kind resumed with at_tail is now confirmed.
    if (this.current) this.#markSynced();
  }

  /** Before the stream starts: takes a saved cache and resume point; handlers see the objects as adds. */
  seed(state: KindState<K>): void {
    if (this.#revision > 0 || this.#cache.size > 0) throw new Error(`the ${this.kind} informer already has a state`);
    for (const object of [...state.objects].sort((a, b) => a.revision - b.revision)) this.#emit(this.#cache.applyChange(object));
    this.#revision = state.revision;
    this.#atTail = state.atTail;
  }

  /** Cache and resume point; `floor`: a revision the caller knows this kind is consistent with too. */
  state(floor: number): KindState<K> {
    return { revision: Math.max(this.#revision, floor), atTail: this.#atTail, objects: this.#cache.list() };
  }

  /** After `revision_compacted`: list again from 0, keeping the cache to diff against. */
  beginRelist(): void {
    this.#revision = 0;
    this.#atTail = false;
    this.#cache.beginRelist();
  }

  /** The stream ended for good: wake waiters and end change iterators. */
  end(error: unknown): void {
    if (this.#ended) return;
    this.#ended = { error };
    if (!this.#synced) for (const w of this.#waiters) w.reject(error);
    this.#waiters.clear();
    this.#signal.close();
  }

  #markSynced(): void {
    if (this.#synced) return;
    this.#synced = true;
    for (const w of this.#waiters) w.resolve();
    this.#waiters.clear();
    this.#signal.notify();
  }

  #advance(revision: number): boolean {
    // Drops what this kind has already seen: replays after a shared stream restarts for a joiner.
    if (revision <= this.#revision) return false;
    this.#revision = revision;
    return true;
  }

  #emit(delta: CacheDelta<KindValue[K]> | undefined): void {
    if (!delta) return;
    switch (delta.type) {
      case 'add':
        for (const h of this.#handlers.add) this.#call(() => h(delta.object));
        break;
      case 'update':
        for (const h of this.#handlers.update) this.#call(() => h(delta.old, delta.object));
        break;
      case 'delete':
        for (const h of this.#handlers.delete) this.#call(() => h(delta.object));
        break;
    }
    this.#signal.notify();
  }

  #call(fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.host.reportHandlerError(err, this.kind);
    }
  }
}
