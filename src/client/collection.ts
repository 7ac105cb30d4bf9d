import { HEADERS, QUERY, formatEtag, parseEtag } from '../protocol/wire.js';
import { identified, isTombstone, listOf, type Identified, type Tombstone } from './guards.js';
import { discardBody, readJson, type HttpTransport } from './http-transport.js';

export interface CallOptions {
  signal?: AbortSignal | undefined;
}

/** Conditional writes: `ifMatch` is the revision the object must still have (else 412 → ConflictError). */
export interface WriteOptions extends CallOptions {
  ifMatch?: number | undefined;
}

/**
 * One page of a paged or incremental list. Items are in revision order;
 * tombstones stand for objects deleted after `gtRevision` or during the listing.
 */
export interface PageOptions extends CallOptions {
  /** Only items changed after this revision (410 → CompactedError when it's too old). */
  gtRevision?: number | undefined;
  /** Page size (1..1000). */
  limit?: number | undefined;
  /** The `next` cursor of the previous page. */
  after?: string | undefined;
}

/** A list answer. `next` is set while more pages remain. */
export interface ListPage<T> {
  items: T[];
  next?: string | undefined;
  /** `X-Fleetplane-Revision`: the organization revision an unpaged list is consistent with. */
  revision?: number | undefined;
  /** The `ETag` to poll with. */
  etag?: string | undefined;
  notModified: false;
}

/** A poll whose `If-None-Match` still matched: nothing changed since `etag`. */
export interface NotModified {
  notModified: true;
  etag: string;
}

const NOT_MODIFIED = 304;

/**
 * Folds list items (pages read to the end, or changes after a revision) into
 * the live set: the latest revision of each id wins, tombstones remove.
 * The result is in revision order.
 */
export function collectList<T extends Identified>(items: Iterable<T | Tombstone>): T[] {
  const live = new Map<string, T>();
  const gone = new Map<string, number>();
  for (const item of items) {
    const known = live.get(item.id)?.revision ?? gone.get(item.id) ?? -1;
    if (item.revision <= known) continue;
    if (isTombstone(item)) {
      live.delete(item.id);
      gone.set(item.id, item.revision);
    } else {
      live.set(item.id, item as T);
    }
  }
  return [...live.values()].sort((a, b) => a.revision - b.revision);
}

/** REST calls shared by every versioned collection (organizations, devices, security groups). */
export class Collection<T extends Identified, Create, Patch> {
  readonly #item: (v: unknown) => v is T;
  readonly #list: (v: unknown) => v is { items: T[]; next?: string };
  readonly #changes: (v: unknown) => v is { items: Array<T | Tombstone>; next?: string };

  constructor(
    private readonly transport: HttpTransport,
    private readonly listPath: string,
    private readonly itemPath: (id: string) => string,
    private readonly what: string,
  ) {
    this.#item = identified<T>();
    this.#list = listOf(this.#item);
    this.#changes = listOf((v: unknown): v is T | Tombstone => isTombstone(v) || this.#item(v));
  }

  /** Every live item, unpaged, with the revision the list is consistent with. */
  async list(opts: CallOptions = {}): Promise<ListPage<T>> {
    const res = await this.transport.send({ method: 'GET', path: this.listPath, signal: opts.signal });
    const body = await readJson(res, this.#list, `GET ${this.listPath}`, `a list of ${this.what}`, opts.signal);
    return page(body, res);
  }

  /** One page; may hold tombstones (see PageOptions). */
  async page(opts: PageOptions = {}): Promise<ListPage<T | Tombstone>> {
    const res = await this.transport.send({
      method: 'GET',
      path: this.listPath,
      query: { [QUERY.gtRevision]: opts.gtRevision, [QUERY.limit]: opts.limit, [QUERY.after]: opts.after },
      signal: opts.signal,
    });
    const body = await readJson(res, this.#changes, `GET ${this.listPath}`, `a page of ${this.what}`, opts.signal);
    return page(body, res);
  }

  /** Follows `next` from the first page (or `opts.after`) to the last. */
  async *pages(opts: PageOptions = {}): AsyncGenerator<ListPage<T | Tombstone>, void, undefined> {
    let after = opts.after;
    for (;;) {
      const p = await this.page({ ...opts, after });
      yield p;
      if (p.next === undefined) return;
      after = p.next;
    }
  }

  /** The items of `pages()`, one by one. Fold them with `collectList` for the live set. */
  async *items(opts: PageOptions = {}): AsyncGenerator<T | Tombstone, void, undefined> {
    for await (const p of this.pages(opts)) yield* p.items;
  }

  /** `If-None-Match` polling: NotModified while the organization revision is still `etag`. */
  async poll(etag: string | number, opts: CallOptions = {}): Promise<ListPage<T> | NotModified> {
    const tag = typeof etag === 'number' ? formatEtag(etag) : etag;
    const res = await this.transport.send({
      method: 'GET',
      path: this.listPath,
      headers: { [HEADERS.ifNoneMatch]: tag },
      allowStatus: [NOT_MODIFIED],
      signal: opts.signal,
    });
    if (res.status === NOT_MODIFIED) {
      await discardBody(res);
      return { notModified: true, etag: res.headers.get(HEADERS.etag) ?? tag };
    }
    const body = await readJson(res, this.#list, `GET ${this.listPath}`, `a list of ${this.what}`, opts.signal);
    return page(body, res);
  }

  get(id: string, opts: CallOptions = {}): Promise<T> {
    return this.transport.json({ method: 'GET', path: this.itemPath(id), signal: opts.signal }, this.#item, `a ${this.what}`);
  }

  create(body: Create, opts: CallOptions & { token?: string | undefined } = {}): Promise<T> {
    return this.createAs(body, this.#item, opts);
  }

  /** POST to the list path with a custom answer shape (enrollment adds `device_token`). */
  createAs<R>(body: Create, check: (v: unknown) => v is R, opts: CallOptions & { token?: string | undefined } = {}): Promise<R> {
    return this.transport.json(
      { method: 'POST', path: this.listPath, body, token: opts.token, signal: opts.signal },
      check,
      `the created ${this.what}`,
    );
  }

  update(id: string, patch: Patch, opts: WriteOptions = {}): Promise<T> {
    return this.transport.json(
      { method: 'PATCH', path: this.itemPath(id), body: patch, headers: ifMatch(opts), signal: opts.signal },
      this.#item,
      `the updated ${this.what}`,
    );
  }

  async delete(id: string, opts: WriteOptions = {}): Promise<void> {
    await this.transport.empty({ method: 'DELETE', path: this.itemPath(id), headers: ifMatch(opts), signal: opts.signal });
  }
}

function ifMatch(opts: WriteOptions): Record<string, string | undefined> {
  return { [HEADERS.ifMatch]: opts.ifMatch === undefined ? undefined : formatEtag(opts.ifMatch) };
}

function page<I>(body: { items: I[]; next?: string }, res: Response): ListPage<I> {
  const etag = res.headers.get(HEADERS.etag) ?? undefined;
  const revision = parseEtag(res.headers.get(HEADERS.revision) ?? undefined);
  return { items: body.items, next: body.next, revision, etag, notModified: false };
}
