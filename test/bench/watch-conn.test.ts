import { createServer, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { WatchConn, type ConnSink } from '../../src/bench/load/watch-conn.js';
import type { WatchSpec } from '../../src/bench/load/messages.js';

/** Chunked framing of one body piece. */
function chunk(text: string): string {
  return `${Buffer.byteLength(text).toString(16)}\r\n${text}\r\n`;
}

const HEAD = 'HTTP/1.1 200 OK\r\nContent-Type: application/json;stream=watch\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n';

let server: Server | undefined;
const serverSockets = new Set<Socket>();
const conns: WatchConn[] = [];

afterEach(async () => {
  for (const c of conns.splice(0)) c.close();
  for (const s of serverSockets) s.destroy();
  serverSockets.clear();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
});

function track(conn: WatchConn): WatchConn {
  conns.push(conn);
  return conn;
}

/** A server that answers with `wire`, cut into the given pieces, each in its own TCP write (with a pause). */
async function serve(pieces: string[]): Promise<WatchSpec> {
  server = createServer((socket: Socket) => {
    serverSockets.add(socket);
    socket.setNoDelay(true);
    // The client under test closes with a TCP reset by design; anything else is a failure.
    socket.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code !== 'ECONNRESET') throw err;
    });
    socket.once('data', async () => {
      for (const p of pieces) {
        socket.write(p);
        await new Promise((r) => setTimeout(r, 5));
      }
    });
  });
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
  const addr = server.address();
  const port = typeof addr === 'object' && addr ? addr.port : 0;
  return { endpoints: [{ host: '127.0.0.1', port }], path: '/api/organizations/o/events', headers: {}, gtRevision: 0, atTail: true };
}

function recorder(): { sink: ConnSink; changes: number[]; errors: string[]; unparsed: number[] } {
  const changes: number[] = [];
  const errors: string[] = [];
  const unparsed: number[] = [];
  return {
    changes,
    errors,
    unparsed,
    sink: {
      onChange: (_c, revision) => changes.push(revision),
      onPosition: () => undefined,
      onErrorEvent: (code) => errors.push(code),
      onUnparsed: () => unparsed.push(1),
      onOpenChange: () => undefined,
    },
  };
}

async function until(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !cond(); i++) await new Promise((r) => setTimeout(r, 10));
}

describe('bench watch connection (hand-written HTTP/1.1 chunked NDJSON reader)', () => {
  it('reads revisions of change, delete, tail and bookmark lines however the bytes are cut', async () => {
    const l1 = '{"kind":"device","type":"change","value":{"id":"a","hostname":"x","revision":11}}\n';
    const l2 = '{"kind":"device","type":"delete","value":{"id":"b","revision":12}}\n';
    const l3 = '{"kind":"device","type":"tail","value":{"revision":12}}\n';
    const l4 = '{"type":"bookmark","value":{"revision":15}}\n';
    // One line spread over three chunks, and two lines in one chunk.
    const wire = HEAD + chunk(l1.slice(0, 20)) + chunk(l1.slice(20, 50)) + chunk(l1.slice(50) + l2) + chunk(l3) + chunk(l4);
    // Cut inside the head, a chunk-size line, a CRLF, and a line.
    const cuts = [40, HEAD.length + 1, HEAD.length + 5, HEAD.length + 40, wire.length - 3];
    const pieces: string[] = [];
    let at = 0;
    for (const c of cuts) {
      pieces.push(wire.slice(at, c));
      at = c;
    }
    pieces.push(wire.slice(at));
    const spec = await serve(pieces);
    const r = recorder();
    const conn = track(new WatchConn(0, 0, '127.0.0.1', 0, r.sink));
    await conn.open(spec, 0, true, 5000);
    await until(() => conn.position === 15);
    expect(r.changes).toEqual([11, 12]);
    expect(conn.position).toBe(15);
    expect(conn.lines).toBe(4);
    expect(conn.bodyBytes).toBe(Buffer.byteLength(l1 + l2 + l3 + l4));
    expect(r.unparsed).toEqual([]);
  });

  it('counts error events and refuses a non-200 answer', async () => {
    const spec = await serve([HEAD + chunk('{"type":"error","value":{"code":"slow_consumer","message":"m"}}\n')]);
    const r = recorder();
    const conn = track(new WatchConn(0, 0, '127.0.0.1', 5, r.sink));
    await conn.open(spec, 5, true, 5000);
    await until(() => r.errors.length > 0);
    expect(r.errors).toEqual(['slow_consumer']);
    expect(conn.position).toBe(5);
    conn.close();
    for (const s of serverSockets) s.destroy();
    await new Promise<void>((resolve) => server?.close(() => resolve()));
    const refused = await serve(['HTTP/1.1 410 Gone\r\nContent-Length: 2\r\n\r\n{}']);
    await expect(track(new WatchConn(1, 0, '127.0.0.1', 0, recorder().sink)).open(refused, 0, true, 5000)).rejects.toThrow(/HTTP 410/);
  });
});
