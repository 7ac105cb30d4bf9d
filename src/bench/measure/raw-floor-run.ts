import { LoadPool, workersFor } from '../load/pool.js';
import { fleetWatchSpec } from './watch-spec.js';
import { RawFloorServer } from '../raw-floor/raw-floor-server.js';
import type { RawWriteMode } from '../raw-floor/messages.js';
import { measureRawFanout, type FanoutFigures } from './fanout.js';
import { sleep } from '../../util/sleep.js';

/** Memory of a server holding N connections, from /proc, as-is and after a full GC. */
export interface MemoryFigures {
  connections: number;
  rssIdleBytes: number;
  rssHeldBytes: number;
  rssIdleAfterGcBytes: number;
  rssHeldAfterGcBytes: number;
  bytesPerConnection: number;
  bytesPerConnectionAfterGc: number;
}

export const SETTLE_MS = 1000;

export interface RawFloorRun {
  memory: MemoryFigures | undefined;
  fanout: Partial<Record<RawWriteMode, FanoutFigures & { loopMs: number; loopCpuUsPerSocket: number }>>;
}

/**
 * One run of the raw floor with N held connections: optionally its memory,
 * and K fires in each of `modes`. Starts and stops its own server and load
 * workers.
 */
export async function rawFloorRun(opts: {
  n: number;
  changes: number;
  modes: RawWriteMode[];
  memory: boolean;
  socketsPerWorker: number;
  signal: AbortSignal;
}): Promise<RawFloorRun> {
  const raw = await RawFloorServer.start();
  const pool = await LoadPool.start(workersFor(opts.n, opts.socketsPerWorker));
  try {
    let idle: { rssBytes: number; rssAfterGcBytes: number } | undefined;
    if (opts.memory) {
      await sleep(SETTLE_MS, opts.signal);
      opts.signal.throwIfAborted();
      idle = await raw.settledRss(true, SETTLE_MS);
    }
    await pool.open(fleetWatchSpec([{ host: '127.0.0.1', port: raw.port }], 'raw', 0), opts.n);
    let memory: MemoryFigures | undefined;
    if (idle) {
      await sleep(SETTLE_MS, opts.signal);
      opts.signal.throwIfAborted();
      const held = await raw.settledRss(false, SETTLE_MS);
      memory = memoryFigures(opts.n, idle, held);
    }
    const fanout: RawFloorRun['fanout'] = {};
    let rev = 1;
    for (const mode of opts.modes) {
      fanout[mode] = await measureRawFanout({ raw, pool, changes: opts.changes, mode, timeoutMs: 30_000, signal: opts.signal, firstRevision: rev });
      rev += opts.changes + 10;
    }
    await pool.closeAll({ forget: true });
    return { memory, fanout };
  } finally {
    await pool.stop();
    await raw.stop();
  }
}

export function memoryFigures(
  n: number,
  idle: { rssBytes: number; rssAfterGcBytes: number },
  held: { rssBytes: number; rssAfterGcBytes: number },
): MemoryFigures {
  return {
    connections: n,
    rssIdleBytes: idle.rssBytes,
    rssHeldBytes: held.rssBytes,
    rssIdleAfterGcBytes: idle.rssAfterGcBytes,
    rssHeldAfterGcBytes: held.rssAfterGcBytes,
    bytesPerConnection: n > 0 ? (held.rssBytes - idle.rssBytes) / n : Number.NaN,
    bytesPerConnectionAfterGc: n > 0 ? (held.rssAfterGcBytes - idle.rssAfterGcBytes) / n : Number.NaN,
  };
}
