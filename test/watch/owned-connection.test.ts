import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { once } from 'node:events';
import { get, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { HEADERS, QUERY, WATCH_KINDS, bearerAuthorization, paths } from '../../src/protocol/index.js';
import { openWatch, type WatchStream } from './support/watch-client.js';
import { eventually, startWatchServer, type WatchServer } from './support/watch-server.js';
import { patchDevice } from './support/objects.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const ALL = WATCH_KINDS.map((kind) => ({ kind }));

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
    await s.waitFor((e) => e.type === 'tail' && e.kind === WATCH_KINDS[WATCH_KINDS.length - 1]);
    const c = only(paths.events(org.id));
    expect(c.socket.parser).toBeNull();
    expect(c.socket._httpMessage).toBeNull();
    await collected(c);

    await patchDevice(ws.h, org.id, d.id, { hostname: 'renamed' });
    await s.waitFor((x) => x.type === 'change' && x.kind === 'device' && x.value.hostname === 'renamed');
  });

  it("sees the client's close at once, with nothing to write", async () => {
    const org = await ws.h.createOrg();
    const s = await openWatch(ws.target(org.id), ALL);
    await s.waitFor((e) => e.type === 'tail' && e.kind === WATCH_KINDS[WATCH_KINDS.length - 1]);
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
    await s.waitFor((e) => e.type === 'tail' && e.kind === WATCH_KINDS[WATCH_KINDS.length - 1]);
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
