import type { Convergence, WatchKind } from '../protocol/wire.js';
import type { PageEvent, StatusesUpdate } from './page-events.js';
import { Backoff, type BackoffPolicy } from '../util/backoff.js';
import type { FleetplaneClient } from './client.js';
import { isRetryable } from './error-mapping.js';
import { CompactedError, PatchBaseError, ProtocolError, TransportError, ValidationError } from './errors.js';
import { KindInformer, type Informer } from './informer.js';
import { parseInformersState, type InformersState } from './informers-state.js';
import { consoleLogger, type InformerLogger } from './logger.js';
import { retryAfterOf } from './retry-after.js';
import { sleep } from '../util/sleep.js';
import { transition, type InformerStatus, type StreamInput } from './stream-state.js';
import type { StreamEvent } from './watch-event-parser.js';

/** Server default of docs/protocol.md: a bookmark at least every 15 s on an idle stream. */
export const DEFAULT_BOOKMARK_INTERVAL_MS = 15_000;

export interface SharedInformersOptions {
  /** The server's bookmark interval; 3× this without a line means the stream is dead. */
  bookmarkIntervalMs?: number;
  backoff?: Partial<BackoffPolicy>;
  /** Source of jitter in [0, 1). */
  random?: () => number;
  /** Milliseconds clock (for the healthy-minute reset). */
  now?: () => number;
  /** Where errors go when no error handler is registered (pino-compatible). Defaults to console. */
  logger?: InformerLogger;
  /** Bound of one watch line (default 16 MiB). */
  maxLineBytes?: number;
  /**
   * Ask for `patch` events (default true): a change that touches a few
   * members of an object comes as those members, not the whole object. A
   * server from before patches refuses the request (400); the stream then
   * asks again without them, for as long as it runs.
   */
  patches?: boolean;
  /**
   * Ask for `gzip` events (default true): a large change (a policy apply's
   * organization) comes packed, and is unpacked before informers see it. A
   * server from before gzip events refuses the request (400); the stream
   * then asks again without them, for as long as it runs.
   */
  gzip?: boolean;
  /**
   * Follow the organization as a page does (docs/protocol.md "Page
   * stream"): the one stream also brings the convergence and device
   * statuses, each to its handler (only those given are asked for). After
   * every reconnection the convergence comes again, and statuses start over
   * with a reset.
   */
  page?: {
    convergence?: (value: Convergence) => void;
    statuses?: (update: StatusesUpdate) => void;
  };
}

/**
 * Where an error came from: the stream (`fatal` when the informers stopped
 * because of it) or a handler of `kind`.
 */
export type InformerErrorContext = { source: 'stream'; fatal: boolean } | { source: 'handler'; kind: WatchKind; fatal: false };

export type InformerErrorHandler = (error: Error, context: InformerErrorContext) => void;

function toError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}

/**
 * Many informers of one organization over ONE watch stream.
 *
 * - `informer(kind)` returns the kind's informer (one per kind). Adding a
 *   kind while the stream runs restarts it: every kind resumes from its own
 *   revision (the new one from 0), and informers drop events they already
 *   have, so nobody sees anything twice.
 * - Any disconnect (error, end, 3 bookmark intervals of silence) reconnects
 *   from each kind's last revision with `at_tail`, after a full-jitter backoff
 *   (0.5 s doubling to 8 s, reset after a healthy minute), and never less
 *   than the server's Retry-After on a 429/503 plus jitter.
 * - `revision_compacted` makes every informer relist from 0 (after the same
 *   backoff) and report only real differences.
 * - It stops only on abort/`stop()`, or on 401/403/404 (`failed` status, error handlers).
 * - `snapshot()` and `seed()` carry the informers' state across runs (a
 *   restarted process resumes from where it was instead of listing again).
 */
export class SharedInformers {
  readonly #client: FleetplaneClient;
  readonly #org: string;
  readonly #opts: SharedInformersOptions;
  readonly #logger: InformerLogger;
  readonly #now: () => number;
  readonly #informers = new Map<WatchKind, KindInformer<WatchKind>>();
  readonly #errorHandlers = new Set<InformerErrorHandler>();
  readonly #statusHandlers = new Set<(status: InformerStatus) => void>();
  readonly #stop = new AbortController();
  #status: InformerStatus = { type: 'starting' };
  #loop: Promise<void> | undefined;
  #conn: AbortController | undefined;
  #restart = false;
  #wakeJoin: (() => void) | undefined;
  #ended: { error: unknown } | undefined;
  /** Highest revision of an event or bookmark received while every informer was current (see `snapshot()`). */
  #agreed = 0;
  /** Whether the next request asks for patch events (off for good once a server refused them). */
  #patches: boolean;
  #gzip: boolean;

  constructor(client: FleetplaneClient, org: string, opts: SharedInformersOptions = {}) {
    this.#client = client;
    this.#org = org;
    this.#opts = opts;
    this.#logger = opts.logger ?? consoleLogger;
    this.#now = opts.now ?? Date.now;
    this.#patches = opts.patches ?? true;
    this.#gzip = opts.gzip ?? true;
  }

  /** The informer of `kind`, created (and joined to a running stream) on first use. */
  informer<K extends WatchKind>(kind: K): Informer<K> {
    // The map holds one informer per kind under its own kind, so the entry for K is a KindInformer<K>.
    const existing = this.#informers.get(kind);
    if (existing) return existing as unknown as Informer<K>;
    const created = new KindInformer(kind, {
      status: () => this.#status,
      reportHandlerError: (error, k) => this.#report(toError(error), { source: 'handler', kind: k, fatal: false }),
    });
    this.#informers.set(kind, created as unknown as KindInformer<WatchKind>);
    if (this.#ended) created.end(this.#ended.error);
    else if (this.#loop) {
      this.#apply({ type: 'progress', synced: false });
      this.#wakeJoin?.();
      if (this.#conn) {
        this.#restart = true;
        this.#conn.abort();
      }
    }
    return created;
  }

  /** Starts the stream (idempotent). Aborting `signal` stops it like `stop()`. */
  start(signal?: AbortSignal): this {
    if (this.#loop) return this;
    if (signal) {
      if (signal.aborted) this.#stop.abort(signal.reason);
      else signal.addEventListener('abort', () => this.#stop.abort(signal.reason), { once: true });
    }
    this.#loop = this.#run(this.#stop.signal);
    return this;
  }

  /**
   * Ends the current stream and opens the next one at once, without backoff,
   * every kind resuming from its revision (`at_tail` where reached): nothing
   * is missed or repeated. For a client whose credential changed (a renewed
   * device token), so the stream stops depending on the old one. No-op while
   * no stream is open.
   */
  reconnect(): void {
    if (!this.#conn) return;
    this.#restart = true;
    this.#conn.abort();
  }

  /** Stops the stream and waits for it to end; informers keep their last state. */
  async stop(): Promise<void> {
    this.#stop.abort();
    if (!this.#loop) this.#end({ type: 'aborted' }, new DOMException('informers stopped', 'AbortError'));
    await this.#loop;
  }

  status(): InformerStatus {
    return this.#status;
  }

  /**
   * Loads a state that `snapshot()` gave (possibly in an earlier process)
   * into the informers created so far; call it after registering handlers
   * and before `start()`. Each informer of a kind in `state` takes its
   * objects (its add handlers are called for each, in revision order) and
   * resumes from its revision with its `at_tail`, so the first watch asks
   * only for what changed since. Kinds without an informer are ignored;
   * informers without a state list from 0. A seeded informer is current at
   * once (the status is `synced` once the stream is accepted) but
   * `hasSynced()` waits for the server to confirm it: the first bookmark,
   * or the tail of a relist when the state turns out to be compacted
   * (`revision_compacted`: the informers relist and report only real
   * differences, as always). Throws TypeError for a malformed state (see
   * parseInformersState), Error once started or when an informer already
   * has a state.
   */
  seed(state: InformersState): void {
    if (this.#loop || this.#ended) throw new Error('seed() must come before start()');
    const parsed = parseInformersState(state);
    if ('problem' in parsed) throw new TypeError(`not an informers state: ${parsed.problem}`);
    for (const i of this.#informers.values()) {
      if (i.revision() > 0 || i.list().length > 0) throw new Error(`the ${i.kind} informer already has a state`);
    }
    for (const [kind, informer] of this.#informers) {
      const kindState = parsed.state[kind];
      if (kindState) informer.seed(kindState);
    }
  }

  /**
   * Every informer's objects and resume point, read at one instant (between
   * two events), for `seed()` to take later; undefined unless every
   * informer is current (at its tail and not relisting: a relisting cache
   * mixes two listings, and only the relist's end knows what vanished).
   * The kinds agree on one revision where the protocol allows it: once
   * every kind is at its tail, events of all kinds arrive in revision
   * order, so an event or bookmark at N received then means every kind is
   * consistent up to N, and each kind's revision is raised to the highest
   * such N. (Left lagging, a rarely changing kind would resume from far
   * back, and could meet `revision_compacted`.)
   */
  snapshot(): InformersState | undefined {
    if (!this.#allCurrent()) return undefined;
    const state: InformersState = {};
    for (const [kind, informer] of this.#informers) Object.assign(state, { [kind]: informer.state(this.#agreed) });
    return state;
  }

  /** True when every informer has synced. */
  hasSynced(): boolean {
    return [...this.#informers.values()].every((i) => i.hasSynced());
  }

  /**
   * Resolves when every informer created so far has synced; rejects with
   * the first one's end, or with `signal`'s reason when it aborts first.
   */
  async waitForSync(signal?: AbortSignal): Promise<void> {
    // The informers wait without the signal and this waits on it once: a listener per kind on a process-long
    // signal (the agent's stop) went past Node's 10 and printed a MaxListenersExceededWarning at every start.
    const all = Promise.all([...this.#informers.values()].map((i) => i.waitForSync()));
    if (signal === undefined) return void (await all);
    if (signal.aborted) throw signal.reason;
    let onAbort: (() => void) | undefined;
    const aborted = new Promise<never>((_, reject) => {
      onAbort = () => reject(signal.reason);
      signal.addEventListener('abort', onAbort, { once: true });
    });
    try {
      await Promise.race([all, aborted]);
    } finally {
      if (onAbort) signal.removeEventListener('abort', onAbort);
      // Left behind by an abort, the informers' wait ends with them (stopped: rejected); that is no one's error.
      all.catch(() => undefined);
    }
  }

  onError(handler: InformerErrorHandler): () => void {
    this.#errorHandlers.add(handler);
    return () => this.#errorHandlers.delete(handler);
  }

  onStatus(handler: (status: InformerStatus) => void): () => void {
    this.#statusHandlers.add(handler);
    return () => this.#statusHandlers.delete(handler);
  }

  #allCurrent(): boolean {
    return [...this.#informers.values()].every((i) => i.current);
  }

  async #run(signal: AbortSignal): Promise<void> {
    const backoff = new Backoff(this.#opts.backoff, this.#opts.random);
    const idleTimeoutMs = 3 * (this.#opts.bookmarkIntervalMs ?? DEFAULT_BOOKMARK_INTERVAL_MS);
    while (!signal.aborted) {
      if (this.#informers.size === 0) {
        await new Promise<void>((resolve) => {
          this.#wakeJoin = resolve;
          signal.addEventListener('abort', () => resolve(), { once: true });
        });
        this.#wakeJoin = undefined;
        continue;
      }
      const members = new Map(this.#informers);
      const asked = { patches: this.#patches, gzip: this.#gzip };
      const watches = [...members.values()].map((i) => i.watch(asked));
      const conn = new AbortController();
      const cut = (): void => conn.abort();
      signal.addEventListener('abort', cut, { once: true });
      this.#conn = conn;
      this.#restart = false;
      let openedAt: number | undefined;
      let failure: unknown;
      try {
        const streamOpts = {
          signal: conn.signal,
          idleTimeoutMs,
          maxLineBytes: this.#opts.maxLineBytes,
          onOpen: () => {
            openedAt = this.#now();
            this.#apply({ type: 'opened', synced: this.#allCurrent() });
          },
        };
        const page = this.#opts.page;
        const events: AsyncGenerator<PageEvent, void, undefined> = page
          ? this.#client.pageEvents(this.#org, { watches, convergence: page.convergence !== undefined, statuses: page.statuses !== undefined }, streamOpts)
          : this.#client.watchEvents(this.#org, watches, streamOpts);
        for await (const event of events) this.#dispatch(event, members);
        failure = new TransportError({ code: 'network_error', message: 'the server ended the watch stream' });
      } catch (err) {
        failure = err;
      } finally {
        signal.removeEventListener('abort', cut);
        this.#conn = undefined;
      }
      if (signal.aborted) break;
      if (this.#restart) continue;

      const error = toError(failure);
      if ((asked.patches || asked.gzip) && error instanceof ValidationError && openedAt === undefined) {
        // A server from before gzip (then before patches): the same request without the newest it refused is one it takes.
        const dropped = asked.gzip ? 'gzip' : 'patch';
        if (asked.gzip) this.#gzip = false;
        else this.#patches = false;
        this.#logger.warn({ err: error }, `fleetplane informer: the server refused ${dropped} events; watching without them`);
        continue;
      }
      // Only informers past revision 0 can be compacted; without one, a 410 is a server fault to back off from.
      // A relist still goes through the backoff: a watcher that keeps falling behind must not relist in a loop.
      // A patch the cache can't apply means the same: its state no longer follows the stream.
      if ((error instanceof CompactedError || error instanceof PatchBaseError) && [...this.#informers.values()].some((i) => i.revision() > 0)) {
        for (const i of this.#informers.values()) i.beginRelist();
        this.#apply({ type: 'progress', synced: false });
      } else if (!isRetryable(error)) {
        this.#end({ type: 'rejected', error }, error);
        this.#report(error, { source: 'stream', fatal: true });
        return;
      }
      const delayMs = backoff.next(openedAt === undefined ? 0 : this.#now() - openedAt, retryAfterOf(error));
      this.#apply({ type: 'disconnected', error, attempt: backoff.failures, delayMs });
      this.#report(error, { source: 'stream', fatal: false });
      await sleep(delayMs, signal);
    }
    this.#end({ type: 'aborted' }, signal.reason ?? new DOMException('informers stopped', 'AbortError'));
  }

  #dispatch(event: PageEvent, members: ReadonlyMap<WatchKind, KindInformer<WatchKind>>): void {
    if (event.type === 'convergence' || event.type === 'statuses') return this.#pageLine(event);
    if (event.type !== 'tail' && this.#allCurrent()) this.#agreed = Math.max(this.#agreed, event.value.revision);
    if (event.type === 'bookmark') {
      for (const i of members.values()) i.handleBookmark(event.value.revision);
      return;
    }
    const informer = members.get(event.kind);
    if (!informer) {
      throw new ProtocolError({ code: 'invalid_response', message: `watch event for kind ${event.kind}, which this stream did not request` });
    }
    switch (event.type) {
      case 'change':
        informer.handleChange(event.value);
        return;
      case 'patch':
        informer.handlePatch(event.value);
        return;
      case 'delete':
        informer.handleDelete(event.value);
        return;
      case 'tail':
        informer.handleTail(event.value.revision);
        this.#apply({ type: 'progress', synced: this.#allCurrent() });
        return;
    }
  }

  /** A page stream's convergence or statuses, to its handler; a handler that throws is reported, not fatal. */
  #pageLine(event: Exclude<PageEvent, StreamEvent>): void {
    try {
      if (event.type === 'convergence') this.#opts.page?.convergence?.(event.value);
      else this.#opts.page?.statuses?.(event);
    } catch (err) {
      this.#logger.error({ err }, `fleetplane informer ${event.type} handler threw`);
    }
  }

  #end(input: StreamInput, error: unknown): void {
    this.#ended ??= { error };
    this.#apply(input);
    for (const i of this.#informers.values()) i.end(error);
  }

  #apply(input: StreamInput): void {
    const next = transition(this.#status, input);
    if (next === this.#status || (next.type === this.#status.type && next.type !== 'retrying')) return;
    this.#status = next;
    for (const h of this.#statusHandlers) {
      try {
        h(next);
      } catch (err) {
        this.#logger.error({ err }, 'fleetplane informer status handler threw');
      }
    }
  }

  #report(error: Error, context: InformerErrorContext): void {
    if (this.#errorHandlers.size === 0) {
      const log = context.fatal ? this.#logger.error : this.#logger.warn;
      log.call(this.#logger, { err: error, ...context }, `fleetplane informer: ${error.message}`);
      return;
    }
    for (const h of this.#errorHandlers) {
      try {
        h(error, context);
      } catch (err) {
        this.#logger.error({ err }, 'fleetplane informer error handler threw');
      }
    }
  }
}
