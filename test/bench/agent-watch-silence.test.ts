import { createServer, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { AgentWatch, STREAM_SILENCE_MS } from '../../src/bench/load/agent-watch.js';
import type { AgentCounters } from '../../src/bench/load/agent-counters.js';
import { SimAgent } from '../../src/bench/load/sim-agent.js';
import { describeStuck } from '../../src/bench/measure/stuck-report.js';
import { nowMs } from '../../src/bench/clock.js';

/**
 * A simulated agent whose watch connection dies without a FIN or reset ever
 * reaching it (what the kernel does to a server-closed connection it gives
 * up on under TCP memory pressure): the server side here simply falls
 * silent and keeps the socket, which is all the agent can see of it.
 */

const HEAD = 'HTTP/1.1 200 OK\r\nContent-Type: application/json;stream=watch\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n';

function chunk(text: string): string {
  return `${Buffer.byteLength(text).toString(16)}\r\n${text}\r\n`;
}

const change = (revision: number): string => `{"kind":"device","type":"change","value":{"id":"d${revision}","hostname":"h","revision":${revision}}}\n`;
const tail = (kind: string, revision: number): string => `{"kind":"${kind}","type":"tail","value":{"revision":${revision}}}\n`;
const bookmark = (revision: number): string => `{"type":"bookmark","value":{"revision":${revision}}}\n`;
const ALL_TAILS = (revision: number): string => tail('device', revision) + tail('organization', revision) + tail('security-group', revision);

/** What the fake server does with the n-th watch request (from 0), given its body. */
type Answer = (n: number, body: unknown, socket: Socket) => void;

let server: Server | undefined;
const sockets = new Set<Socket>();
const watches: Array<{ stop(): void }> = [];
const timers: NodeJS.Timeout[] = [];

afterEach(async () => {
  for (const w of watches.splice(0)) w.stop();
  for (const t of timers.splice(0)) clearInterval(t);
  for (const s of sockets) s.destroy();
  sockets.clear();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
});

/** A watch endpoint that hands each request's JSON body to `answer`; returns the bodies seen. */
async function serve(answer: Answer): Promise<{ port: number; bodies: unknown[] }> {
  const bodies: unknown[] = [];
  server = createServer((socket) => {
    sockets.add(socket);
    // The agent resets connections by design.
    socket.on('error', () => undefined);
    let text = '';
    socket.on('data', (b: Buffer) => {
      text += b.toString('latin1');
      const at = text.indexOf('\r\n\r\n');
      const length = Number(/content-length: (\d+)/i.exec(text)?.[1] ?? -1);
      if (at < 0 || length < 0 || text.length < at + 4 + length) return;
      const body: unknown = JSON.parse(text.slice(at + 4, at + 4 + length));
      text = '';
      bodies.push(body);
      answer(bodies.length - 1, body, socket);
    });
  });
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
  const addr = server.address();
  return { port: typeof addr === 'object' && addr ? addr.port : 0, bodies };
}

function agent(port: number, silenceMs: number | undefined): { watch: AgentWatch; counters: AgentCounters; readies: number[] } {
  const counters: AgentCounters = {};
  const readies: number[] = [];
  const watch = new AgentWatch({ host: '127.0.0.1', port, org: 'o', token: 't' }, '127.0.0.1', counters, { onReady: (at) => readies.push(at), onSeen: () => undefined }, silenceMs);
  watches.push(watch);
  watch.start();
  return { watch, counters, readies };
}

async function until(cond: () => boolean, ms = 5_000): Promise<boolean> {
  const end = Date.now() + ms;
  while (!cond() && Date.now() < end) await new Promise((r) => setTimeout(r, 10));
  return cond();
}

describe('bench agent watch on a connection that dies silently', () => {
  it('gives up a stream silent mid-list and reaches its tails by resuming on a new connection', async () => {
    const { port, bodies } = await serve((n, _body, socket) => {
      // First stream: part of the device list, then nothing, ever (the connection is gone).
      if (n === 0) socket.write(HEAD + chunk(change(5) + change(7)));
      else socket.write(HEAD + chunk(change(9) + ALL_TAILS(9)));
    });
    const { watch, counters, readies } = agent(port, 300);
    expect(await until(() => readies.length > 0), 'the agent reaches its tails after giving up the silent stream').toBe(true);
    expect(watch.isReady).toBe(true);
    expect(counters['watch.silent']).toBe(1);
    expect(counters['watch.dropped']).toBeUndefined();
    // It resumed the device kind from what it had, and listed the kinds it had nothing of.
    expect(bodies[1]).toEqual([{ kind: 'device', gt_revision: 7, patches: true, gzip: true }, { kind: 'security-group', patches: true, gzip: true }, { kind: 'organization', patches: true, gzip: true }]);
  });

  it('gives up a stream silent after its tails (no bookmark) and resumes at its tails', async () => {
    const { port, bodies } = await serve((n, _body, socket) => {
      if (n === 0) return void socket.write(HEAD + chunk(change(3) + ALL_TAILS(4)));
      // The new stream is healthy: a bookmark on every idle interval.
      socket.write(HEAD);
      timers.push(setInterval(() => socket.write(chunk(bookmark(4))), 50));
    });
    const { counters, readies } = agent(port, 300);
    expect(await until(() => readies.length >= 2)).toBe(true);
    expect(counters['watch.silent']).toBe(1);
    expect(bodies[1]).toEqual([
      { kind: 'device', gt_revision: 4, at_tail: true, patches: true, gzip: true },
      { kind: 'security-group', gt_revision: 4, at_tail: true, patches: true, gzip: true },
      { kind: 'organization', gt_revision: 4, at_tail: true, patches: true, gzip: true },
    ]);
  });

  it('keeps a stream that sends bookmarks', async () => {
    const { port, bodies } = await serve((_n, _body, socket) => {
      socket.write(HEAD + chunk(ALL_TAILS(4)));
      timers.push(setInterval(() => socket.write(chunk(bookmark(4))), 50));
    });
    const { counters, readies } = agent(port, 300);
    expect(await until(() => readies.length > 0)).toBe(true);
    await new Promise((r) => setTimeout(r, 1_000));
    expect(bodies).toHaveLength(1);
    expect(counters['watch.silent']).toBeUndefined();
  });

  it('a simulated agent watches for silence against fleetplane (it sends bookmarks), not against the raw floor', async () => {
    const { port } = await serve((_n, _body, socket) => socket.write(HEAD));
    const host = { counters: {}, putSender: () => undefined, progress: () => undefined };
    const sim = new SimAgent(0, { deviceId: 'dev-0', token: 't' }, '127.0.0.1', host);
    watches.push(sim);
    sim.start({ host: '127.0.0.1', port, org: 'o', tunnel: false, bookmarks: true, ack: 'none' });
    expect(sim.diagnose(nowMs())?.silenceMs).toBe(STREAM_SILENCE_MS);
    expect(STREAM_SILENCE_MS).toBe(45_000);
    sim.start({ host: '127.0.0.1', port, org: 'o', tunnel: false, bookmarks: false, ack: 'none' });
    expect(sim.diagnose(nowMs())?.silenceMs).toBeNull();
  });

  it('without bookmarks to expect (the raw floor), waits on a silent stream and says where it is stuck', async () => {
    const { port, bodies } = await serve((_n, _body, socket) => socket.write(HEAD + chunk(change(5))));
    const { watch } = agent(port, undefined);
    await new Promise((r) => setTimeout(r, 600));
    expect(bodies).toHaveLength(1);
    const d = watch.diagnose(nowMs());
    expect(d).toMatchObject({ state: 'open', ready: false, socketHeld: true, retryArmed: false, silenceMs: null, tailed: [], revisions: [5, 0, 0] });
    expect(d.trace.map((t) => t.replace(/^-\d+ms /, ''))).toEqual(['POST [{"kind":"device","patches":true,"gzip":true},{"kind":"security-group","patches":true,"gzip":true},{"kind":"organization","patches":true,"gzip":true}]', 'HTTP 200']);
    const line = describeStuck({ byState: { 'open, socket held': 1 }, examples: [{ deviceId: 'dev-1', ...d }] });
    expect(line).toContain('1 open, socket held');
    expect(line).toContain('device dev-1: open, tails [], revisions [5,0,0]');
    expect(line).toContain('HTTP 200');
  });
});
