import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { once } from 'node:events';
import { createServer, get, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import type { Socket } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { HEADERS, QUERY, WATCH_KINDS, bearerAuthorization, paths } from '../../src/protocol/index.js';
import { openWatch, type WatchStream } from './support/watch-client.js';
import { eventually, startWatchServer, type WatchServer } from './support/watch-server.js';
import { patchDevice } from './support/objects.js';
import { ownConnection } from '../../src/server/streams/own-connection.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
setFlagsFromString('--allow-natives-syntax');
/** Whether V8 keeps `o` with fast properties: a socket in dictionary mode misses the inline caches of every write. */
const hasFastProperties = runInNewContext('(o) => %HasFastProperties(o)') as (o: object) => boolean;

const ALL = WATCH_KINDS.map((kind) => ({ kind }));

/** Waits for the last kind's tail: the stream has listed everything and streams on. */
async function listed(s: WatchStream): Promise<void> {
  await s.waitFor((e) => e.type === 'tail' && e.kind === WATCH_KINDS[WATCH_KINDS.length - 1]);
}

interface Captured {
  req: WeakRef<IncomingMessage>;
  res: WeakRef<ServerResponse>;
  socket: Socket & { parser?: unknown; _httpMessage?: unknown };
}

/**
 * A watch stream (and a convergence stream) holds its connection for good, so
 * the server takes it out of node:http once the stream starts: the request,
 * the response and the parser must not stay alive with it.
 */
describe('a stream owns its connection', () => {
  let ws: WatchServer;
  const captured = new Map<string, Captured[]>();
  const streams: WatchStream[] = [];

  beforeAll(async () => {
    ws = await startWatchServer('pglite');
    ws.server.app.server.on('request', (req: IncomingMessage, res: ServerResponse) => {
      const path = (req.url ?? '').split('?')[0] ?? '';
      const list = captured.get(path) ?? [];
      list.push({ req: new WeakRef(req), res: new WeakRef(res), socket: req.socket });
      captured.set(path, list);
    });
  });
  afterEach(() => {
    for (const s of streams.splice(0)) s.destroy();
    captured.clear();
  });
  afterAll(async () => {
    await ws.close();
  });

  function only(path: string): Captured {
    const list = captured.get(path) ?? [];
    expect(list).toHaveLength(1);
    const c = list[0];
    if (!c) throw new Error(`no request to ${path}`);
    return c;
  }

  async function collected(c: Captured): Promise<void> {
    await eventually(() => {
      gc();
      return c.req.deref() === undefined && c.res.deref() === undefined;
    }, "the stream's request and response are collected");
  }

  it("frees a watch stream's request, response and parser while it streams, and still streams", async () => {
    const org = await ws.h.createOrg();
    const d = await ws.h.createDevice(org.id);
    const s = await openWatch(ws.target(org.id), ALL);
    streams.push(s);
    await listed(s);
    const c = only(paths.events(org.id));
    expect(c.socket.parser).toBeNull();
    expect(c.socket._httpMessage).toBeNull();
    expect(hasFastProperties(c.socket)).toBe(true);
    await collected(c);

    await patchDevice(ws.h, org.id, d.id, { hostname: 'renamed' });
    await s.waitFor((x) => x.type === 'change' && x.kind === 'device' && x.value.hostname === 'renamed');
  });

  it("sees the client's close at once, with nothing to write", async () => {
    const org = await ws.h.createOrg();
    const s = await openWatch(ws.target(org.id), ALL);
    await listed(s);
    const c = only(paths.events(org.id));
    expect(await ws.metric('fleetplane_watchers')).toBe(1);
    // No bookmarks here (the interval is an hour): only reading the socket can notice the close.
    s.destroy();
    await eventually(() => c.socket.destroyed, "the server's socket closes");
    await eventually(async () => (await ws.metric('fleetplane_watchers')) === 0, 'the stream is gone');
  });

  it('ends its side when the client half-closes, as node:http does', async () => {
    const org = await ws.h.createOrg();
    const s = await openWatch(ws.target(org.id), ALL);
    streams.push(s);
    await listed(s);
    const c = only(paths.events(org.id));
    s.socket.end();
    await eventually(() => c.socket.destroyed, "the server's socket closes after the client's half-close");
    expect((await s.ended).complete).toBe(false);
  });

  it("frees a convergence stream's request and response too", async () => {
    const org = await ws.h.createOrg();
    const res = await new Promise<IncomingMessage>((resolve, reject) => {
      const url = `${ws.url}${paths.convergence(org.id)}?${QUERY.watch}=true`;
      get(url, { headers: { [HEADERS.authorization]: bearerAuthorization(ws.h.admin) }, agent: false }, resolve).on('error', reject);
    });
    try {
      expect(res.statusCode).toBe(200);
      await once(res, 'data');
      const c = only(paths.convergence(org.id));
      expect(c.socket.parser).toBeNull();
      await collected(c);
    } finally {
      res.destroy();
    }
  });
});

describe('ownConnection on a Node whose HTTP internals differ', () => {
  it("leaves the connection to node:http, which still answers on it, and says so once", async () => {
    const warnings: string[] = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => warnings.push(line) });
    const taken: boolean[] = [];
    const server = createServer((req, res) => {
      const socket: Socket & { parser?: unknown } = req.socket;
      // As if a Node release named its drain listener otherwise.
      for (const l of socket.listeners('drain') as ((...a: unknown[]) => void)[]) if (l.name === 'bound socketOnDrain') socket.removeListener('drain', l);
      taken.push(ownConnection(req, res, logger), ownConnection(req, res, logger));
      expect(socket.parser).toBeTruthy();
      res.end('still served');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const { port } = server.address() as AddressInfo;
      const res = await new Promise<IncomingMessage>((resolve, reject) => get(`http://127.0.0.1:${port}/`, { agent: false }, resolve).on('error', reject));
      const chunks: Buffer[] = [];
      for await (const c of res) chunks.push(c as Buffer);
      expect(Buffer.concat(chunks).toString()).toBe('still served');
      expect(taken).toEqual([false, false]);
      expect(warnings).toHaveLength(1);
    } finally {
      server.close();
    }
  });
});
