import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WATCH_KINDS } from '../../src/protocol/index.js';
import { KernelMemoryGuard, type GuardedStream } from '../../src/server/streams/kernel-memory-guard.js';
import { PAGE_BYTES, procTcpMemory, type TcpMemorySource } from '../../src/server/streams/proc-tcp.js';
import { ConnectionIndex, scanProcNetTcp, scanProcNetTcpFile } from '../../src/server/streams/proc-tcp-scan.js';
import { tcpConnection, type TcpConnection } from '../../src/server/streams/tcp-connection.js';
import { requireBinary } from '../support/binaries.js';
import { hasKernelTcpFigures } from './support/kernel-tcp.js';
import { createBigGroup, openTracked } from './support/stall.js';
import { eventually, startWatchServer, type WatchServer } from './support/watch-server.js';

function fail(message: string): never {
  throw new Error(message);
}

const linux = hasKernelTcpFigures() || requireBinary('Linux /proc TCP figures (/proc/net/tcp, /proc/net/sockstat)', false);

describe('/proc/net/tcp figures', () => {
  const v4 = tcpConnection({ localAddress: '127.0.0.1', localPort: 8080, remoteAddress: '127.0.0.2', remotePort: 40000 });
  const mapped = tcpConnection({ localAddress: '::ffff:127.0.0.1', localPort: 8080, remoteAddress: '::ffff:127.0.0.3', remotePort: 40001 });
  const loopback6 = tcpConnection({ localAddress: '::1', localPort: 8080, remoteAddress: '::1', remotePort: 40002 });
  const v6 = tcpConnection({ localAddress: 'fe80::200:ff:c0a8:1fe', localPort: 80, remoteAddress: '2001:db8::1', remotePort: 50000 });
  const TCP = [
    '  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode',
    '   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0 100 0 0 10 0',
    '   1: 0100007F:1F90 0200007F:9C40 01 003C0000:00000000 01:00000014 00000000     0        0 2 1 0 20 4 30 10 -1',
    // The same remote endpoint to another local port, and another remote port: not wanted.
    '   2: 0100007F:1F91 0200007F:9C40 01 00000099:00000000 01:00000014 00000000     0        0 2 1 0 20 4 30 10 -1',
    '   3: 0100007F:1F90 0200007F:9C3F 01 00000098:00000000 01:00000014 00000000     0        0 2 1 0 20 4 30 10 -1',
  ];
  const TCP6 = [
    '  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode',
    '   0: 0000000000000000FFFF00000100007F:1F90 0000000000000000FFFF00000300007F:9C41 01 00000010:00000000 00:00000000 00000000     0        0 3 1 0 20 4 30 10 -1',
    '   1: 00000000000000000000000001000000:1F90 00000000000000000000000001000000:9C42 08 00000000:00000000 00:00000000 00000000     0        0 4 1 0 20 4 30 10 -1',
    '   2: 000080FE00000000FF000002FE01A8C0:0050 B80D0120000000000000000001000000:C350 01 00000001:00000000 00:00000000 00000000     0        0 5 1 0 20 4 30 10 -1',
    // Differs from the one above only in the remote address's first word.
    '   3: 000080FE00000000FF000002FE01A8C0:0050 B80D0121000000000000000001000000:C350 01 00000002:00000000 00:00000000 00000000     0        0 5 1 0 20 4 30 10 -1',
  ];

  it('finds the wanted connections of /proc/net/tcp and tcp6 (IPv4-mapped addresses as IPv4), every endpoint compared', () => {
    const wanted = [v4, mapped, loopback6, v6].map((c) => c ?? fail('no connection'));
    const out = new Map<TcpConnection, number>();
    const index = new ConnectionIndex(wanted);
    scanProcNetTcp(Buffer.from(TCP.join('\n'), 'latin1'), index, out);
    scanProcNetTcp(Buffer.from(`${TCP6.join('\n')}\n`, 'latin1'), index, out);
    expect([...out.entries()]).toEqual([
      [v4, 0x3c0000],
      [mapped, 0x10],
      [loopback6, 0],
      [v6, 1],
    ]);
    // The IPv4 connection as a dual-stack socket reports it: the same line.
    const dual = tcpConnection({ localAddress: '::ffff:127.0.0.1', localPort: 8080, remoteAddress: '::ffff:127.0.0.2', remotePort: 40000 }) ?? fail('no connection');
    const found = new Map<TcpConnection, number>();
    scanProcNetTcp(Buffer.from(TCP.join('\n'), 'latin1'), new ConnectionIndex([dual]), found);
    expect(found.get(dual)).toBe(0x3c0000);
  });

  it('reads a file in pieces: lines cut by a read are found whole', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'fleetplane-proc-tcp-'));
    try {
      // 4,000 lines of 150 bytes: 600 KB, more than two reads' worth.
      const lines = [TCP[0] ?? ''];
      const wanted: TcpConnection[] = [];
      for (let i = 0; i < 4000; i++) {
        const port = 10_000 + i;
        lines.push(`${String(i).padStart(4)}: 0100007F:1F90 0200007F:${port.toString(16).toUpperCase().padStart(4, '0')} 01 ${i.toString(16).toUpperCase().padStart(8, '0')}:00000000 00:00000000 00000000     0        0 ${i} 1 0 20 4 30 10 -1`.padEnd(149));
        if (i % 3 === 0) wanted.push(tcpConnection({ localAddress: '127.0.0.1', localPort: 8080, remoteAddress: '127.0.0.2', remotePort: port }) ?? fail('no connection'));
      }
      const file = join(dir, 'tcp');
      await writeFile(file, `${lines.join('\n')}\n`);
      const out = new Map<TcpConnection, number>();
      await scanProcNetTcpFile(file, new ConnectionIndex(wanted), out);
      expect(out.size).toBe(wanted.length);
      for (const c of wanted) expect(out.get(c)).toBe(c.remotePort - 10_000);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  describe.runIf(linux)('on this kernel', () => {
    let server: Server;
    const accepted: Socket[] = [];
    const clients: Socket[] = [];
    beforeAll(async () => {
      server = createServer((s) => {
        accepted.push(s);
        // More than a loopback connection takes when its client doesn't read.
        s.write(Buffer.alloc(16 * 1024 * 1024));
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    });
    afterAll(async () => {
      for (const s of [...clients, ...accepted]) s.destroy();
      await new Promise((resolve) => server.close(resolve));
    });

    it("finds a connection by node's endpoints, with the bytes its peer has not acknowledged", async () => {
      const port = (server.address() as { port: number }).port;
      const client = connect({ host: '127.0.0.1', port });
      clients.push(client);
      client.pause();
      await eventually(() => accepted.length === 1, 'the connection is accepted');
      const served = accepted[0];
      if (!served) throw new Error('unreachable');
      const servedConnection = tcpConnection(served) ?? fail('no connection');
      const clientConnection = tcpConnection(client) ?? fail('no connection');
      await eventually(async () => ((await procTcpMemory.sendQueues([servedConnection])).get(servedConnection) ?? 0) > 1024 * 1024, 'the kernel holds what the client does not read');
      const queues = await procTcpMemory.sendQueues([servedConnection, clientConnection]);
      expect(queues.get(clientConnection)).toBe(0);
      expect(procTcpMemory.pages()).toBeGreaterThan(0);
      expect(procTcpMemory.pressurePages()).toBeGreaterThan(0);
      expect(procTcpMemory.sendBufferMax()).toBeGreaterThan(0);
    });
  });
});

/** A stream as the guard sees it; its fields are set by the test. */
class FakeStream implements GuardedStream {
  closed = false;
  paused = false;
  caughtUp = false;
  /** When it last paused (performance.now()); never: -Infinity. */
  pausedAt = Number.NEGATIVE_INFINITY;
  lastWriteAt = performance.now();
  handed = 0;
  drained = false;
  woken = 0;
  constructor(readonly connection: TcpConnection) {}
  wake(): void {
    this.woken++;
  }
}

const PRESSURE = 1000;
const LIMIT = PRESSURE / 2;
const BUFFER_MAX = 40 * PAGE_BYTES;

function fakeKernel(): TcpMemorySource & { now: number; queues: Map<TcpConnection, number> } {
  return {
    now: 0,
    queues: new Map(),
    pages() {
      return this.now;
    },
    pressurePages: () => PRESSURE,
    sendBufferMax: () => BUFFER_MAX,
    async sendQueues() {
      return new Map(this.queues);
    },
  };
}

/** The stall grace the tests give the guard: long enough to tell apart, short enough to wait for. */
const GRACE_MS = 200;

function guarded(n: number, source = fakeKernel()) {
  const streams = Array.from({ length: n }, (_, i) => new FakeStream(tcpConnection({ localAddress: '127.0.0.1', localPort: 8080, remoteAddress: '127.0.0.2', remotePort: 10_000 + i }) ?? fail('no connection')));
  const shed: FakeStream[] = [];
  // As the watch engine keeps them: a closed stream leaves the set.
  const open = new Set(streams);
  const guard = new KernelMemoryGuard<FakeStream>({
    source,
    minHeld: 4 * PAGE_BYTES,
    watchers: open,
    stallGraceMs: GRACE_MS,
    shed: (s) => {
      s.closed = true;
      open.delete(s);
      shed.push(s);
    },
    logger: pino({ level: 'silent' }),
  });
  return { guard, source, streams, shed };
}

/** Lets the guard's read of the send queues (started by `check`) finish. */
const settle = () => new Promise((r) => setTimeout(r, 10));
const longAgo = () => performance.now() - 10 * GRACE_MS;
/** Past the grace since the last look, and past the least spacing between two reads of the send queues. */
const pastGrace = () => new Promise((r) => setTimeout(r, GRACE_MS + 60));

describe('KernelMemoryGuard', () => {
  it('under its share of the kernel pressure threshold lets everything go; past it, holds lists back, lets readers and streams that drained go on, and wakes the held once there is room', async () => {
    const { guard, source, streams, shed } = guarded(10);
    const [list, reader, stalled] = streams;
    if (!list || !reader || !stalled) throw new Error('unreachable');
    reader.caughtUp = true;
    // What is past the share is the streams': one holds a lot in the kernel (and wrote just now: not closed yet).
    stalled.caughtUp = true;
    source.queues.set(stalled.connection, 50 * PAGE_BYTES);
    source.queues.set(reader.connection, 0);
    source.now = LIMIT - 5;
    expect(guard.admit(list, 1000)).toBe(true);
    expect(guard.admit(reader, 1000)).toBe(true);
    source.now = LIMIT + 1;
    // The guard reads the kernel's figures again once they are a few milliseconds old.
    await settle();
    // Past the share, streams at the head wait too until a look at the send queues shows they read.
    expect(guard.admit(reader, 1000)).toBe(false);
    await guard.check();
    await settle();
    expect(reader.woken).toBe(1);
    expect(guard.admit(list, 1000)).toBe(false);
    expect(guard.admit(reader, 1000)).toBe(true);
    expect(guard.admit(stalled, 1000)).toBe(false);
    // A stream whose client drained a full send buffer reads: what it is handed replaces what it took.
    const reading = streams[3];
    if (!reading) throw new Error('unreachable');
    reading.drained = true;
    expect(guard.admit(reading, 1000)).toBe(true);
    await guard.check();
    expect(list.woken).toBe(0);
    source.now = LIMIT - 10;
    await guard.check();
    expect(list.woken).toBe(1);
    expect(guard.waitingCount).toBe(0);
    expect(shed).toEqual([]);
  });

  it('counts what it admitted since it last read the kernel: a burst stops at the limit', () => {
    const { guard, source, streams } = guarded(10);
    source.now = LIMIT - 10;
    const admitted = streams.filter((s) => guard.admit(s, 4 * PAGE_BYTES)).length;
    // 10 pages left: two streams of 4 pages, then the third crosses the limit, and the rest wait.
    expect(admitted).toBe(3);
  });

  it('closes streams paused past the grace and seen holding their queues as long, those paused longest first, until the excess is covered', async () => {
    const { guard, source, streams, shed } = guarded(10);
    const [old, older, recent] = streams;
    if (!old || !older || !recent) throw new Error('unreachable');
    for (const s of [old, older, recent]) {
      s.paused = true;
      s.handed = 100 * PAGE_BYTES;
      s.lastWriteAt = longAgo();
      source.queues.set(s.connection, 40 * PAGE_BYTES);
    }
    old.pausedAt = longAgo();
    older.pausedAt = old.pausedAt - 1000;
    // 50 pages over: one paused stream holds up to a whole send buffer (40 pages), so two are closed, but
    // only once the guard has seen them take nothing for the grace: the first look closes none.
    source.now = LIMIT + 50;
    await guard.check();
    await settle();
    expect(shed).toEqual([]);
    await pastGrace();
    recent.pausedAt = performance.now();
    await guard.check();
    expect(shed).toEqual([older, old]);
    expect(recent.closed).toBe(false);
  });

  it('past its share, reads the send queues: streams holding more than their limit wait, and those seen stalled for the grace are closed, the heaviest first', async () => {
    const { guard, source, streams, shed } = guarded(10);
    const [light, heavy, heavier, busy, reader] = streams;
    if (!light || !heavy || !heavier || !busy || !reader) throw new Error('unreachable');
    for (const s of streams) {
      s.caughtUp = true;
      s.lastWriteAt = longAgo();
    }
    source.queues = new Map([
      [reader.connection, 0],
      [light.connection, 3 * PAGE_BYTES],
      [heavy.connection, 20 * PAGE_BYTES],
      [heavier.connection, 30 * PAGE_BYTES],
      [busy.connection, 90 * PAGE_BYTES],
    ]);
    source.now = LIMIT + 25;
    await guard.check();
    await settle();
    expect(shed).toEqual([]);
    await pastGrace();
    busy.lastWriteAt = performance.now();
    await guard.check();
    await settle();
    // 25 pages over: the heavier (30) covers it; the busy one wrote within the grace.
    expect(shed).toEqual([heavier]);
    // Streams at the head holding more than their limit in the kernel are held back; readers go on.
    expect(guard.admit(heavy, 1)).toBe(false);
    expect(guard.admit(busy, 1)).toBe(false);
    expect(guard.admit(light, 1)).toBe(true);
    expect(guard.admit(reader, 1)).toBe(true);
  });

  it('does not close a stream it holds back, or one paused, while its client takes bytes from its send queue; one whose queue stays put for the grace is closed', async () => {
    const { guard, source, streams, shed } = guarded(10);
    const [reading, pausedReading, stuck] = streams;
    if (!reading || !pausedReading || !stuck) throw new Error('unreachable');
    // Held back by the guard (or waiting for a drain) long ago: none of them wrote since.
    for (const s of [reading, pausedReading, stuck]) s.lastWriteAt = longAgo();
    pausedReading.paused = true;
    pausedReading.pausedAt = longAgo();
    pausedReading.handed = 100 * PAGE_BYTES;
    source.queues = new Map([
      [reading.connection, 60 * PAGE_BYTES],
      [pausedReading.connection, 60 * PAGE_BYTES],
      [stuck.connection, 50 * PAGE_BYTES],
    ]);
    source.now = LIMIT + 500;
    expect(guard.admit(reading, 1)).toBe(false);
    await guard.check();
    await settle();
    expect(shed).toEqual([]);
    // Looks more frequent than the grace, as in the server (a look every check, the grace 10 s).
    for (let i = 0; i < 6; i++) {
      await new Promise((r) => setTimeout(r, GRACE_MS / 2));
      // The clients of two of them took a little since the last look.
      source.queues.set(reading.connection, (source.queues.get(reading.connection) ?? 0) - PAGE_BYTES);
      source.queues.set(pausedReading.connection, (source.queues.get(pausedReading.connection) ?? 0) - PAGE_BYTES);
      await guard.check();
      await settle();
    }
    expect(shed).toEqual([stuck]);
    expect(reading.closed).toBe(false);
    expect(pausedReading.closed).toBe(false);
  });

  it('when the streams hold none of what is past the share, they all go on', async () => {
    const { guard, source, streams, shed } = guarded(10);
    const [list] = streams;
    if (!list) throw new Error('unreachable');
    source.now = LIMIT + 100;
    expect(guard.admit(list, 1)).toBe(false);
    await guard.check();
    await settle();
    expect(shed).toEqual([]);
    expect(list.woken).toBe(1);
    expect(guard.admit(list, 1)).toBe(true);
  });

  it('does nothing with streams too few to hold a tenth of its share, or without the kernel figures', async () => {
    // 1 stream × 40 pages < 0.1 × 500 pages.
    const few = guarded(1);
    few.source.now = PRESSURE;
    const [only] = few.streams;
    if (!only) throw new Error('unreachable');
    expect(few.guard.admit(only, 1)).toBe(true);
    const blind = guarded(10, { ...fakeKernel(), pages: () => undefined });
    const [any] = blind.streams;
    if (!any) throw new Error('unreachable');
    expect(blind.guard.limitPages).toBeUndefined();
    expect(blind.guard.admit(any, 1)).toBe(true);
    expect(await blind.guard.check()).toBe(0);
  });
});

describe.runIf(linux)('a watcher closed with slow_consumer', () => {
  let ws: WatchServer;
  beforeAll(async () => {
    ws = await startWatchServer('pglite', { watchBufferLimit: 64 * 1024, slowConsumerTimeout: 0.3 });
  });
  afterAll(async () => {
    await ws.close();
  });

  it('has its connection reset: the kernel keeps nothing of it (an orphan would go on holding its send buffer)', async () => {
    const org = (await ws.h.createOrg()).id;
    // About 7 MB: more than a loopback connection takes when its client doesn't read.
    for (let i = 0; i < 20; i++) await createBigGroup(ws, org, i);
    const { stream, watcher } = await openTracked(ws, org, { paused: true, watches: WATCH_KINDS.map((kind) => ({ kind })) });
    const served = watcher.connection;
    const client = tcpConnection(stream.socket);
    if (served === undefined || client === undefined) throw new Error('no connection');
    await eventually(() => watcher.closed, 'the stalled watcher is closed');
    expect(await ws.metric('fleetplane_watch_streams_ended_total', { reason: 'slow_consumer' })).toBe(1);
    // Twice: a read of the table while connections come and go may skip one.
    for (let i = 0; i < 2; i++) {
      const queues = await procTcpMemory.sendQueues([served, client]);
      expect(queues.has(served)).toBe(false);
      expect(queues.has(client)).toBe(false);
    }
    stream.destroy();
  });

  it('at the head, with everything in the kernel, is reset too, and its descriptor closed (a reset during a shutdown would leave it open)', async () => {
    const org = (await ws.h.createOrg()).id;
    await createBigGroup(ws, org, 0);
    const { stream, watcher } = await openTracked(ws, org, { paused: true, watches: WATCH_KINDS.map((kind) => ({ kind })) });
    await eventually(() => watcher.caughtUp, 'the watcher sent everything');
    expect(watcher.paused).toBe(false);
    const served = watcher.connection;
    if (served === undefined) throw new Error('no connection');
    const endedBefore = await ws.metric('fleetplane_watch_streams_ended_total', { reason: 'slow_consumer' });
    watcher.close('slow_consumer', 'closed by the test');
    expect(await ws.metric('fleetplane_watch_streams_ended_total', { reason: 'slow_consumer' })).toBe(endedBefore + 1);
    await eventually(async () => !(await procTcpMemory.sendQueues([served])).has(served), 'the connection is gone from the kernel');
    stream.destroy();
  });
});
