/**
 * An in-memory fleetplane server for SDK tests, speaking docs/protocol.md's watch
 * stream and a subset of the REST routes. Level-based like the real one: a
 * resume gets the latest state of everything changed after its revision.
 * Tests drive it: mutate, compact, send bookmarks/errors/raw lines, freeze
 * or cut streams.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import {
  ERRORS,
  HEADERS,
  MEDIA,
  QUERY,
  WATCH_KINDS,
  formatEtag,
  isWatchKind,
  parseEtag,
  type ErrorCode,
  type WatchKind,
} from '../../../src/protocol/index.js';
import { FakeConvergenceFeed } from './fake-convergence.js';

export type Obj = { id: string; revision: number } & Record<string, unknown>;

interface Entry {
  kind: WatchKind;
  type: 'change' | 'delete';
  value: Obj;
  /** A change of a live object: its previous revision and the members `put` set (what a patch event carries). */
  patch?: { from: number; set: Record<string, unknown> };
}

interface Watcher {
  res: ServerResponse;
  kinds: Set<WatchKind>;
  /** Kinds whose changes go out as patch events where they can. */
  patches: Set<WatchKind>;
  cursor: number;
  frozen: boolean;
}

const COLLECTIONS: Record<string, WatchKind> = { devices: 'device', security_groups: 'security-group' };

export class FakeFleetServer {
  readonly org = randomUUID();
  token = 'test-token';
  head = 0;
  compacted = 0;
  readonly live = new Map<WatchKind, Map<string, Obj>>(WATCH_KINDS.map((k) => [k, new Map()]));
  readonly log: Entry[] = [];
  readonly watchers = new Set<Watcher>();
  /** Every watch request body, in order. */
  readonly watchRequests: unknown[] = [];
  /**
   * Serve every kind of a watch from the lowest `gt_revision` in it, replaying
   * the raw log (what a server with one stream-wide revision would do): kinds
   * get events they already have, stale ones included, which their informers must drop.
   */
  lowestRevisionForAll = false;
  /** Answer the next watch requests with this error instead of a stream. */
  rejectWatches: ErrorCode | undefined;
  /** Answer watch requests that ask for patches (or gzip) with 400 `validation_failed`, as a server from before patches. */
  refusePatches = false;
  /** Answer watch requests that ask for gzip with 400 `validation_failed`, as a server from before gzip events. */
  refuseGzip = false;
  /** `Retry-After` sent with rejected watches answering 429/503. */
  rejectRetryAfter: string | undefined;
  /** `GET .../convergence[?watch=true]`. */
  readonly convergence = new FakeConvergenceFeed();
  /** Every request line (method and URL), with its headers. */
  readonly requests: Array<{ method: string; url: string; headers: IncomingMessage['headers']; body: string }> = [];
  /** Called with each request once it is recorded, before it is answered (e.g. to make a concurrent change). */
  onRequest: ((request: { method: string; url: string }) => void) | undefined;
  #server: Server;
  url = '';

  readonly #scheme: 'http' | 'https';

  /** `tls`: serve https with this certificate and key instead of http. */
  constructor(opts: { tls?: { cert: string; key: string } } = {}) {
    const handler = (req: IncomingMessage, res: ServerResponse): void => {
      void this.#handle(req, res).catch((err: unknown) => {
        res.destroy(err instanceof Error ? err : new Error(String(err)));
      });
    };
    this.#scheme = opts.tls ? 'https' : 'http';
    this.#server = opts.tls ? createHttpsServer(opts.tls, handler) : createServer(handler);
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    this.url = `${this.#scheme}://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
    return this;
  }

  async close(): Promise<void> {
    this.cutAll();
    this.convergence.cut();
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  // ---- state ----

  put(kind: WatchKind, fields: Record<string, unknown> & { id?: string }): Obj {
    const id = fields.id ?? randomUUID();
    const old = this.live.get(kind)!.get(id);
    const value: Obj = { ...old, ...fields, id, revision: ++this.head };
    this.live.get(kind)!.set(id, value);
    const { id: _id, ...set } = fields;
    this.log.push({ kind, type: 'change', value, ...(old ? { patch: { from: old.revision, set } } : {}) });
    this.#pump();
    return value;
  }

  remove(kind: WatchKind, id: string): void {
    const old = this.live.get(kind)!.get(id);
    if (!old) throw new Error(`no ${kind} ${id}`);
    this.live.get(kind)!.delete(id);
    this.log.push({ kind, type: 'delete', value: { ...old, revision: ++this.head } });
    this.#pump();
  }

  /** Forgets tombstones up to `revision` (default: the head). */
  compact(revision = this.head): void {
    this.compacted = revision;
  }

  state(kind: WatchKind): Obj[] {
    return [...this.live.get(kind)!.values()].sort((a, b) => a.revision - b.revision);
  }

  // ---- stream control ----

  bookmark(revision = this.head): void {
    this.#broadcast({ type: 'bookmark', value: { revision } });
  }

  /** Sends an error event and ends every stream. */
  sendError(code: ErrorCode, message: string = ERRORS[code].message): void {
    this.#broadcast({ type: 'error', value: { code, message } });
    for (const w of this.watchers) w.res.end();
    this.watchers.clear();
  }

  sendRaw(text: string): void {
    for (const w of this.watchers) w.res.write(text);
  }

  /** Streams stay open but send nothing more (a dead connection). */
  freezeAll(): void {
    for (const w of this.watchers) w.frozen = true;
  }

  /** Destroys every watch connection mid-stream. */
  cutAll(): void {
    for (const w of this.watchers) w.res.socket?.destroy();
    this.watchers.clear();
  }

  // ---- HTTP ----

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readBody(req);
    const url = new URL(req.url ?? '/', 'http://x');
    this.requests.push({ method: req.method ?? '', url: url.pathname + url.search, headers: req.headers, body });
    this.onRequest?.({ method: req.method ?? '', url: url.pathname + url.search });
    if (req.headers.authorization !== `Bearer ${this.token}` && !req.headers.authorization?.startsWith('Bearer fpr_')) {
      return this.#error(res, 'unauthorized');
    }
    const parts = url.pathname.split('/').filter(Boolean); // api organizations {org} ...
    if (parts[0] !== 'api' || parts[1] !== 'organizations') return this.#error(res, 'not_found');
    const org = parts[2];
    if (org === undefined) return this.#collection(req, res, url, 'organization', body, undefined);
    if (parts.length === 3) return this.#collection(req, res, url, 'organization', body, org);
    if (org !== this.org) return this.#error(res, 'not_found', 'organization not found');
    const sub = parts[3] ?? '';
    if (sub === 'events' && req.method === 'POST') return this.#watch(res, body);
    if (sub === 'convergence' && req.method === 'GET') return this.convergence.handle(res, url);
    // An empty audit log: tests read what ctl asked for in `requests`.
    if (sub === 'audit' && req.method === 'GET') return this.#json(res, 200, { items: [] });
    if (sub === 'tokens' && req.method === 'POST') {
      const input = JSON.parse(body) as Record<string, unknown>;
      return this.#json(res, 201, { id: randomUUID(), organization_id: org, role: input['role'], description: input['description'] ?? '', expires_at: null, created_at: now(), token: 'fpt_secret' });
    }
    if (sub === 'registration_keys' && req.method === 'POST') {
      const input = JSON.parse(body) as Record<string, unknown>;
      return this.#json(res, 201, { id: randomUUID(), organization_id: org, description: input['description'] ?? '', single_use: input['single_use'] ?? false, expires_at: null, used: false, created_at: now(), key: 'fpr_secret' });
    }
    const kind = COLLECTIONS[sub];
    if (!kind) return this.#error(res, 'not_found');
    if (parts[5] === 'rpc') {
      if (!this.live.get('device')!.has(parts[4] ?? '')) return this.#error(res, 'not_found', 'device not found');
      if (parts[6] === 'ping') return this.#json(res, 200, { pong: true, revision: this.head, wait: url.searchParams.get(QUERY.wait) });
      return this.#error(res, 'agent_not_connected');
    }
    return this.#collection(req, res, url, kind, body, parts[4]);
  }

  #collection(req: IncomingMessage, res: ServerResponse, url: URL, kind: WatchKind, body: string, id: string | undefined): void {
    const items = this.live.get(kind)!;
    if (id === undefined) {
      if (req.method === 'POST') {
        const input = JSON.parse(body) as Record<string, unknown>;
        if ('tunnel_ip' in input) return this.#error(res, 'field_owned_elsewhere', 'tunnel_ip is owned by the server');
        const created = this.put(kind, { ...input, organization_id: this.org, created_at: now() });
        // Like the real server: every new device comes with its token, whoever created it.
        const enrolled = kind === 'device' ? { device_token: 'fpd_secret' } : {};
        return this.#json(res, 201, { ...created, ...enrolled });
      }
      const etag = formatEtag(this.head);
      if (req.headers[HEADERS.ifNoneMatch] === etag) {
        res.writeHead(304, { etag });
        return void res.end();
      }
      const gt = Number(url.searchParams.get(QUERY.gtRevision) ?? 0);
      const limit = url.searchParams.get(QUERY.limit);
      const after = Number(url.searchParams.get(QUERY.after) ?? 0);
      if (gt > 0 && gt < this.compacted) return this.#error(res, 'revision_compacted');
      let list: Obj[] =
        gt > 0 || limit !== null
          ? this.#changesSince(kind, Math.max(gt, after))
              .filter((e) => e.type === 'change' || gt > 0 || after > 0)
              .map((e) => (e.type === 'delete' ? { id: e.value.id, revision: e.value.revision, deleted: true } : e.value))
          : this.state(kind);
      let next: string | undefined;
      if (limit !== null && list.length > Number(limit)) {
        list = list.slice(0, Number(limit));
        next = String(list[list.length - 1]!.revision);
      }
      res.setHeader(HEADERS.etag, etag);
      res.setHeader(HEADERS.revision, String(this.head));
      return this.#json(res, 200, next === undefined ? { items: list } : { items: list, next });
    }
    const current = items.get(id);
    if (!current) return this.#error(res, 'not_found', `${kind} not found`);
    const ifMatch = req.headers[HEADERS.ifMatch];
    if (typeof ifMatch === 'string' && parseEtag(ifMatch) !== current.revision) return this.#error(res, 'precondition_failed');
    if (req.method === 'GET') return this.#json(res, 200, current);
    if (req.method === 'PATCH') return this.#json(res, 200, this.put(kind, { ...(JSON.parse(body) as Record<string, unknown>), id }));
    if (req.method === 'DELETE') {
      this.remove(kind, id);
      res.writeHead(204);
      return void res.end();
    }
    this.#error(res, 'bad_request');
  }

  /** Latest entry per id with revision > `gt`, in revision order (level-based). */
  #changesSince(kind: WatchKind, gt: number): Entry[] {
    const latest = new Map<string, Entry>();
    for (const e of this.log) if (e.kind === kind && e.value.revision > gt) latest.set(e.value.id, e);
    return [...latest.values()].sort((a, b) => a.value.revision - b.value.revision);
  }

  #watch(res: ServerResponse, body: string): void {
    this.watchRequests.push(JSON.parse(body));
    if (this.rejectWatches) {
      if (this.rejectRetryAfter !== undefined) res.setHeader(HEADERS.retryAfter, this.rejectRetryAfter);
      return this.#error(res, this.rejectWatches);
    }
    const watches = JSON.parse(body) as Array<{ kind: string; gt_revision?: number; at_tail?: boolean; patches?: boolean; gzip?: boolean }>;
    if (!Array.isArray(watches) || watches.length === 0 || !watches.every((w) => isWatchKind(w.kind))) {
      return this.#error(res, 'validation_failed');
    }
    if (this.refusePatches && watches.some((w) => w.patches !== undefined || w.gzip !== undefined)) return this.#error(res, 'validation_failed');
    if (this.refuseGzip && watches.some((w) => w.gzip !== undefined)) return this.#error(res, 'validation_failed');
    if (watches.some((w) => (w.gt_revision ?? 0) > 0 && (w.gt_revision ?? 0) < this.compacted)) {
      return this.#error(res, 'revision_compacted');
    }
    res.writeHead(200, { [HEADERS.contentType]: MEDIA.watch });
    res.flushHeaders();
    const watcher: Watcher = { res, kinds: new Set(), patches: new Set(), cursor: this.head, frozen: false };
    const lowest = Math.min(...watches.map((w) => w.gt_revision ?? 0));
    for (const w of watches) {
      const kind = w.kind as WatchKind;
      watcher.kinds.add(kind);
      if (w.patches === true) watcher.patches.add(kind);
      const own = w.gt_revision ?? 0;
      const replay = this.lowestRevisionForAll && lowest < own;
      const entries = replay
        ? this.log.filter((e) => e.kind === kind && e.value.revision > lowest)
        : own === 0
          ? this.state(kind).map((value): Entry => ({ kind, type: 'change', value }))
          : this.#changesSince(kind, own);
      for (const e of entries) res.write(`${JSON.stringify({ kind, type: e.type, value: e.value })}\n`);
      if (!w.at_tail) res.write(`${JSON.stringify({ kind, type: 'tail', value: { revision: this.head } })}\n`);
    }
    this.watchers.add(watcher);
    res.on('close', () => this.watchers.delete(watcher));
  }

  #pump(): void {
    for (const w of this.watchers) {
      if (w.frozen) continue;
      for (const e of this.log) {
        if (e.value.revision <= w.cursor || !w.kinds.has(e.kind)) continue;
        const p = w.patches.has(e.kind) ? e.patch : undefined;
        const event = p
          ? { kind: e.kind, type: 'patch', value: { revision: e.value.revision, from_revision: p.from, id: e.value.id, set: p.set } }
          : { kind: e.kind, type: e.type, value: e.value };
        w.res.write(`${JSON.stringify(event)}\n`);
      }
      w.cursor = this.head;
    }
  }

  #broadcast(event: unknown): void {
    for (const w of this.watchers) if (!w.frozen) w.res.write(`${JSON.stringify(event)}\n`);
  }

  #json(res: ServerResponse, status: number, body: unknown): void {
    res.writeHead(status, { [HEADERS.contentType]: MEDIA.json });
    res.end(JSON.stringify(body));
  }

  #error(res: ServerResponse, code: ErrorCode, message: string = ERRORS[code].message): void {
    this.#json(res, ERRORS[code].status, { error: { code, message } });
  }
}

function now(): string {
  return new Date().toISOString();
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
