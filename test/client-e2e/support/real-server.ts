/** The real fleetplane server, in process and listening, with an admin SDK client. */
import { randomBytes } from 'node:crypto';
import { startServer, type FleetServer, type Settings } from '../../../src/server/index.js';
import {
  FleetplaneClient,
  type DeviceObject,
  type Informer,
  type InformerLogger,
  type KindValue,
  type SharedInformersOptions,
  type WatchKind,
} from '../../../src/client/index.js';

export const ADMIN_TOKEN = 'fpa_client_e2e_admin_token';

export interface RealServer {
  server: FleetServer;
  url: string;
  admin: FleetplaneClient;
  close(): Promise<void>;
}

export async function startRealServer(overrides: Partial<Settings> = {}): Promise<RealServer> {
  const server = await startServer(
    { memory: true, host: '127.0.0.1', port: 0, logLevel: 'silent', adminToken: ADMIN_TOKEN, bookmarkInterval: 0.2, ...overrides },
    { listen: true },
  );
  const url = server.url;
  if (url === undefined) throw new Error('the server is not listening');
  const close = async (): Promise<void> => {
    const closing = server.close();
    // Node's fetch opens a spare connection after a streaming response is aborted, and sends
    // nothing on it; http.Server.close() leaves such connections open until headersTimeout
    // (about 70 s), so a plain close() would wait that long after any aborted watch.
    server.app.server.closeAllConnections();
    await closing;
  };
  return { server, url, admin: new FleetplaneClient({ baseUrl: url, token: ADMIN_TOKEN }), close };
}

/** A WireGuard public key: 32 random bytes, base64. */
export function wgKey(): string {
  return randomBytes(32).toString('base64');
}

let counter = 0;
export function uniqueName(prefix: string): string {
  return `${prefix}-${process.pid}-${counter++}`;
}

export const silentLogger: InformerLogger = { warn: () => undefined, error: () => undefined };

/** Fast retries, so tests don't wait for production backoff. */
export function fastInformers(bookmarkIntervalMs: number): SharedInformersOptions {
  return { backoff: { initialMs: 1, maxMs: 25 }, logger: silentLogger, bookmarkIntervalMs };
}

/** A device as the watch stream carries it: REST's form without `status`. */
export function withoutStatus(d: DeviceObject & { status?: unknown }): DeviceObject {
  const { status: _status, ...rest } = d;
  return rest;
}

export function byId<T extends { id: string }>(items: readonly T[]): Map<string, T> {
  return new Map(items.map((i) => [i.id, i]));
}

/**
 * Rebuilds an informer's state from its callbacks alone, starting empty, and
 * records every callback that contradicts the state so far.
 */
export function mirror<K extends WatchKind>(informer: Informer<K>, violations: string[]): Map<string, KindValue[K]> {
  const m = new Map<string, KindValue[K]>();
  informer.onAdd((o) => {
    if (m.has(o.id)) violations.push(`${informer.kind}: add of present ${o.id}@${o.revision}`);
    m.set(o.id, o);
  });
  informer.onUpdate((old, o) => {
    const known = m.get(o.id);
    if (known === undefined || known.revision !== old.revision) violations.push(`${informer.kind}: update of ${o.id} from unknown ${old.revision}`);
    if (o.revision <= old.revision) violations.push(`${informer.kind}: update of ${o.id} not newer (${old.revision} -> ${o.revision})`);
    m.set(o.id, o);
  });
  informer.onDelete((o) => {
    if (!m.has(o.id)) violations.push(`${informer.kind}: delete of absent ${o.id}@${o.revision}`);
    m.delete(o.id);
  });
  return m;
}

/** Records an informer's callbacks as `add <name>`, `update <name>`, `delete <name>`. */
export function record<K extends WatchKind>(informer: Informer<K>, name: (o: KindValue[K]) => string): string[] {
  const log: string[] = [];
  informer.onAdd((o) => log.push(`add ${name(o)}`));
  informer.onUpdate((_old, o) => log.push(`update ${name(o)}`));
  informer.onDelete((o) => log.push(`delete ${name(o)}`));
  return log;
}

/** Polls `cond` until it holds; fails after `limitMs` (a hang guard, not a timing assertion). */
export async function until(cond: () => boolean | Promise<boolean>, what: string, limitMs = 10_000): Promise<void> {
  const deadline = Date.now() + limitMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
