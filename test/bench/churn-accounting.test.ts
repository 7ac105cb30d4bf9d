import { createServer, type Server, type Socket } from 'node:net';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { EndpointPublisher } from '../../src/agent/status/endpoint-publisher.js';
import type { InterfaceTable } from '../../src/agent/status/endpoints.js';
import type { FleetplaneClient } from '../../src/client/index.js';
import type { DevicePatch } from '../../src/protocol/index.js';
import { COUNTER, diffCounters, type AgentCounters } from '../../src/bench/load/agent-counters.js';
import { AgentWatch } from '../../src/bench/load/agent-watch.js';
import { WatchEventTally } from '../../src/bench/load/event-tally.js';
import {
  CHURN_EVENT_BYTES_LIMIT,
  churnAccounting,
  churnAgents,
  churnCount,
  churnEndpoints,
  churnVerdicts,
  endpointPatch,
} from '../../src/bench/measure/churn-accounting.js';

/**
 * The churn step's accounting (fleet bench, (g)): what a simulated agent
 * counts of the events it receives, and how the step turns the counters'
 * movement into events per watcher per change, bytes and re-lists.
 */

const HEAD = 'HTTP/1.1 200 OK\r\nContent-Type: application/json;stream=watch\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n';
const chunk = (text: string): string => `${Buffer.byteLength(text).toString(16)}\r\n${text}\r\n`;
const change = (kind: string, revision: number): string => `{"kind":"${kind}","type":"change","value":{"id":"d${revision}","endpoints":[],"revision":${revision}}}\n`;
const tail = (kind: string, revision: number): string => `{"kind":"${kind}","type":"tail","value":{"revision":${revision}}}\n`;
const bookmark = (revision: number): string => `{"type":"bookmark","value":{"revision":${revision}}}\n`;
const ALL_TAILS = (revision: number): string => tail('device', revision) + tail('security-group', revision) + tail('organization', revision);

let server: Server | undefined;
const sockets = new Set<Socket>();
const watches: AgentWatch[] = [];

afterEach(async () => {
  for (const w of watches.splice(0)) w.stop();
  for (const s of sockets) s.destroy();
  sockets.clear();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
});

/** A watch endpoint that hands each request's JSON body and socket to `answer`. */
async function serve(answer: (n: number, socket: Socket) => void): Promise<{ port: number; bodies: unknown[] }> {
  const bodies: unknown[] = [];
  server = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
    let text = '';
    socket.on('data', (b: Buffer) => {
      text += b.toString('latin1');
      const at = text.indexOf('\r\n\r\n');
      const length = Number(/content-length: (\d+)/i.exec(text)?.[1] ?? -1);
      if (at < 0 || length < 0 || text.length < at + 4 + length) return;
      bodies.push(JSON.parse(text.slice(at + 4, at + 4 + length)) as unknown);
      text = '';
      answer(bodies.length - 1, socket);
    });
  });
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
  const addr = server.address();
  return { port: typeof addr === 'object' && addr ? addr.port : 0, bodies };
}

async function until(cond: () => boolean, ms = 5_000): Promise<boolean> {
  const end = Date.now() + ms;
  while (!cond() && Date.now() < end) await new Promise((r) => setTimeout(r, 10));
  return cond();
}

function countersOf(watch: AgentWatch, counters: AgentCounters): AgentCounters {
  return watch.tally.addTo({ ...counters });
}

describe('churn accounting from the agents counters', () => {
  it('passes exactly one event per watcher per change, small events and no re-list', () => {
    const watchers = 2_000;
    const changes = 200;
    const before: AgentCounters = { [COUNTER.events('change', 'device')]: 4_000_000, [COUNTER.eventBytes('change', 'device')]: 2e9, [COUNTER.watchRequests]: 2_000, [COUNTER.watchLists]: 2_000 };
    const after: AgentCounters = {
      ...before,
      [COUNTER.events('change', 'device')]: 4_000_000 + watchers * changes,
      [COUNTER.eventBytes('change', 'device')]: 2e9 + watchers * changes * 640,
      [COUNTER.statusFramesSent]: 6_000,
    };
    const a = churnAccounting(diffCounters(after, before), watchers, changes);
    expect(a.events).toBe(400_000);
    expect(a.eventsPerWatcherPerChange).toBe(1);
    expect(a.meanEventBytes).toBe(640);
    expect(a.relists).toBe(0);
    expect(a.resumes).toBe(0);
    expect(a.statusFrames).toBe(6_000);
    expect(churnVerdicts(a)).toEqual({ oneEventPerChange: true, smallEvents: true, noRelists: true });
  });

  it('fails one event more or less, an event of another kind, a re-list and a 410', () => {
    const one = (extra: AgentCounters): ReturnType<typeof churnVerdicts> =>
      churnVerdicts(churnAccounting({ [COUNTER.events('change', 'device')]: 10 * 3, [COUNTER.eventBytes('change', 'device')]: 30 * 500, ...extra }, 10, 3));
    expect(one({}).oneEventPerChange).toBe(true);
    expect(one({ [COUNTER.events('change', 'device')]: 29 }).oneEventPerChange).toBe(false);
    expect(one({ [COUNTER.events('change', 'device')]: 31 }).oneEventPerChange).toBe(false);
    expect(one({ [COUNTER.events('change', 'organization')]: 1, [COUNTER.eventBytes('change', 'organization')]: 100 }).oneEventPerChange).toBe(false);
    expect(one({ [COUNTER.watchRequests]: 1, [COUNTER.watchLists]: 1 }).noRelists).toBe(false);
    expect(one({ [COUNTER.watchRequests]: 1, [COUNTER.http('watch', 410)]: 1 }).noRelists).toBe(false);
    // A resume is not a re-list (it is counted apart, and its errors are).
    const resumed = churnAccounting({ [COUNTER.events('change', 'device')]: 30, [COUNTER.watchRequests]: 2, [COUNTER.watchDropped]: 2 }, 10, 3);
    expect(resumed.relists).toBe(0);
    expect(resumed.resumes).toBe(2);
    expect(resumed.errors).toBe(2);
    expect(one({ [COUNTER.eventBytes('change', 'device')]: 30 * (CHURN_EVENT_BYTES_LIMIT + 1) }).smallEvents).toBe(false);
    expect(churnVerdicts(churnAccounting({}, 10, 0)).oneEventPerChange).toBe(false);
  });

  it('picks 10% of the agents, spread over the pool', () => {
    expect(churnCount(2_000)).toBe(200);
    expect(churnCount(10_000)).toBe(1_000);
    const chosen = churnAgents(2_000);
    expect(chosen).toHaveLength(200);
    expect(new Set(chosen).size).toBe(200);
    expect(chosen[0]).toBe(0);
    expect(chosen[199]).toBe(1_990);
    expect(churnAgents(10)).toEqual([0]);
  });
});

describe('a simulated agent counts the events it receives', () => {
  it('counts change lines with their bytes, not tails, bookmarks or keepalives, and reports what it saw once per read', async () => {
    const burst = change('device', 11) + change('device', 12) + change('device', 13);
    const { port } = await serve((_n, socket) => {
      socket.write(HEAD + chunk(change('device', 5) + ALL_TAILS(10)));
      setTimeout(() => socket.write(chunk(burst) + chunk('\n') + chunk(bookmark(13))), 50);
    });
    const counters: AgentCounters = {};
    const seen: number[] = [];
    const watch = new AgentWatch({ host: '127.0.0.1', port, org: 'o', token: 't' }, '127.0.0.1', counters, { onReady: () => undefined, onSeen: (r) => seen.push(r) }, undefined);
    watches.push(watch);
    watch.start();
    expect(await until(() => seen.includes(13))).toBe(true);
    const c = countersOf(watch, counters);
    // The list's one change and the burst's three: 4 events, every byte of each line with its newline.
    expect(c[COUNTER.events('change', 'device')]).toBe(4);
    expect(c[COUNTER.eventBytes('change', 'device')]).toBe(Buffer.byteLength(change('device', 5) + burst));
    expect(c[COUNTER.watchLists]).toBe(1);
    // Ready at 10, then the burst (one read) once, not once per event.
    expect(seen).toEqual([10, 13]);
  });

  it('counts a list after revision_compacted as a re-list, and a resume not', async () => {
    const { port, bodies } = await serve((n, socket) => {
      if (n === 0) return void socket.end(HEAD + chunk(ALL_TAILS(10)) + chunk(change('device', 11)) + '0\r\n\r\n');
      if (n === 1) return void socket.end(HEAD + chunk(change('device', 12) + '{"type":"error","value":{"code":"revision_compacted","message":"m"}}\n') + '0\r\n\r\n');
      socket.write(HEAD + chunk(change('device', 13) + ALL_TAILS(13)));
    });
    const counters: AgentCounters = {};
    const watch = new AgentWatch({ host: '127.0.0.1', port, org: 'o', token: 't' }, '127.0.0.1', counters, { onReady: () => undefined, onSeen: () => undefined }, undefined);
    watches.push(watch);
    const before = countersOf(watch, counters);
    watch.start();
    expect(await until(() => bodies.length >= 3 && watch.isReady, 10_000)).toBe(true);
    const a = churnAccounting(diffCounters(countersOf(watch, counters), before), 1, 3);
    expect(bodies[1]).toEqual([
      { kind: 'device', gt_revision: 11, at_tail: true, patches: true, gzip: true },
      { kind: 'security-group', gt_revision: 10, at_tail: true, patches: true, gzip: true },
      { kind: 'organization', gt_revision: 10, at_tail: true, patches: true, gzip: true },
    ]);
    expect(bodies[2]).toEqual([{ kind: 'device', patches: true, gzip: true }, { kind: 'security-group', patches: true, gzip: true }, { kind: 'organization', patches: true, gzip: true }]);
    // The join's list and the list after revision_compacted; the resume between them is not one.
    expect(a.relists).toBe(2);
    expect(a.resumes).toBe(1);
    expect(a.events).toBe(3);
  });

  it('sums tallies over an agent\'s connections and load workers', () => {
    const t = new WatchEventTally();
    t.add('change', 0, 600);
    const u = new WatchEventTally();
    u.add('change', 0, 400);
    u.add('delete', 2, 100);
    t.addAll(u);
    expect(t.addTo({})).toEqual({
      [COUNTER.events('change', 'device')]: 2,
      [COUNTER.eventBytes('change', 'device')]: 1_000,
      [COUNTER.events('delete', 'organization')]: 1,
      [COUNTER.eventBytes('delete', 'organization')]: 100,
    });
  });
});

describe('the churn PATCH', () => {
  it('is the body the agent\'s endpoint publisher sends when its STUN mapping moved', async () => {
    const agent = 1_234;
    const before = churnEndpoints(agent, 0);
    const after = churnEndpoints(agent, 1);
    expect(after.stun).not.toBe(before.stun);
    expect(after.local).toEqual(before.local);
    const sent: DevicePatch[] = [];
    const client = { devices: { update: (_org: string, _id: string, patch: DevicePatch) => Promise.resolve(void sent.push(patch)) } } as unknown as FleetplaneClient;
    const interfaces = (): InterfaceTable => ({
      eth0: [
        { address: after.local[0]?.split(':')[0] ?? '', netmask: '255.255.255.0', family: 'IPv4', mac: '00:00:00:00:00:01', internal: false, cidr: null },
        { address: 'fd00::4d3', netmask: 'ffff:ffff:ffff:ffff::', family: 'IPv6', mac: '00:00:00:00:00:01', internal: false, cidr: null, scopeid: 0 },
      ],
    });
    const publisher = new EndpointPublisher({
      client,
      org: 'o',
      deviceId: 'd',
      manual: [],
      listenPort: 51820,
      interfaceName: 'fp0',
      logger: pino({ level: 'silent' }),
      interfaces,
      stun: () => ({ kind: 'mapped', endpoint: after.stun, symmetric: false }),
    });
    // The server holds the first mapping (published the same way): only the endpoints differ.
    const held = endpointPatch(agent, 0).endpoints ?? [];
    expect(await publisher.check({ endpoints: held, symmetric_nat: false })).toBe(true);
    expect(sent).toEqual([endpointPatch(agent, 1)]);
  });
});
