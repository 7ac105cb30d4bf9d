import { sleep } from '../../util/sleep.js';
import { log } from '../log.js';
import { benchDataDir } from '../server/data-dir.js';
import type { ProbeJob, StorageEngine } from './storage-probe-messages.js';
import { probeCommand, runProbe } from './storage-probe-run.js';
import { countSyncCalls, total, type SyncCounts } from './strace-window.js';
import { treeMemory, type TreeMemory } from './tree-memory.js';

/** Sizes of one engine's run (recorded in results). */
export const STORAGE_SIZES = {
  /** Writes timed one at a time. */
  sequentialWrites: 2_000,
  /** Writes timed in all by CONCURRENCY writers. */
  concurrentWrites: 2_000,
  concurrency: 32,
  /** Sequential writes counted under strace. */
  windowWrites: 200,
  /** Unmeasured writes before each series. */
  warmupWrites: 50,
  /** Pause between "ready" and reading memory. */
  settleMs: 2_000,
} as const;

const START_TIMEOUT_MS = 180_000;
const WRITES_TIMEOUT_MS = 300_000;

/** Figures of one engine in one run (NaN where not measured). */
export interface StorageFigures {
  /** From the probe process's start to opened + migrated, on an empty directory (PostgreSQL: includes initdb). */
  firstStartMs: number;
  /** The same on the directory the first start left (stopped cleanly). */
  restartMs: number;
  /** Harness spawn() → `ready` line, for comparison. */
  firstSpawnToReadyMs: number;
  restartSpawnToReadyMs: number;
  /** fsync + fdatasync + sync_file_range + msync begun inside the window of sequential commits, per commit. */
  syncCallsPerCommit: number;
  /** Process tree after the restart, idle for settleMs. */
  idleRssBytes: number;
  idlePssBytes: number;
  idleProcesses: number;
  /** Process tree after the first start, idle for settleMs. */
  firstIdleRssBytes: number;
  firstIdlePssBytes: number;
  sequentialWritesPerSecond: number;
  sequentialP50Ms: number;
  sequentialP99Ms: number;
  concurrentWritesPerSecond: number;
  concurrentP50Ms: number;
  concurrentP99Ms: number;
}

export interface StorageRun {
  engine: StorageEngine;
  run: number;
  figures: StorageFigures;
  firstMemory: TreeMemory;
  idleMemory: TreeMemory;
  syncCalls: SyncCounts | undefined;
  commands: { firstStart: string[]; restart: string[]; strace?: string[] };
}

function job(engine: StorageEngine, dataDir: string, writes: Partial<ProbeJob>): ProbeJob {
  return {
    engine,
    dataDir,
    holdAfterReady: false,
    warmupWrites: STORAGE_SIZES.warmupWrites,
    sequentialWrites: 0,
    concurrentWrites: 0,
    concurrency: STORAGE_SIZES.concurrency,
    windowWrites: 0,
    ...writes,
  };
}

/**
 * One engine, one run, on a fresh temporary directory: a first start (then
 * idle memory), a restart (idle memory, then the timed writes), and, when
 * strace can run, a third start under strace for the sync calls per commit.
 * The directory is removed, and any PostgreSQL left on it ended, however
 * the run ends.
 */
export async function storageRun(engine: StorageEngine, run: number, withStrace: boolean, signal: AbortSignal): Promise<StorageRun> {
  const dir = benchDataDir(`storage-${engine}`);
  try {
    const idleAfter = (into: { mem?: TreeMemory }) => async (ready: { pid: number }) => {
      await sleep(STORAGE_SIZES.settleMs, signal);
      signal.throwIfAborted();
      into.mem = treeMemory(ready.pid);
    };
    log.info({ scenario: 'storage', engine, run, step: 'first start' }, 'run');
    const first: { mem?: TreeMemory } = {};
    const firstJob = job(engine, dir.path, { holdAfterReady: true });
    const a = await runProbe({ job: firstJob, onReady: idleAfter(first), timeoutMs: START_TIMEOUT_MS, signal });
    log.info({ scenario: 'storage', engine, run, step: 'restart and writes' }, 'run');
    const second: { mem?: TreeMemory } = {};
    const writesJob = job(engine, dir.path, {
      holdAfterReady: true,
      sequentialWrites: STORAGE_SIZES.sequentialWrites,
      concurrentWrites: STORAGE_SIZES.concurrentWrites,
    });
    const b = await runProbe({ job: writesJob, onReady: idleAfter(second), timeoutMs: WRITES_TIMEOUT_MS, signal });
    let syncCalls: SyncCounts | undefined;
    let straceCommand: string[] | undefined;
    if (withStrace) {
      log.info({ scenario: 'storage', engine, run, step: 'sync calls under strace' }, 'run');
      const out = `${dir.path}.strace`;
      const traceJob = job(engine, dir.path, { windowWrites: STORAGE_SIZES.windowWrites });
      straceCommand = probeCommand(traceJob, out);
      const c = await runProbe({ job: traceJob, straceOut: out, timeoutMs: WRITES_TIMEOUT_MS, signal });
      if (!c.window) throw new Error('the traced probe reported no write window');
      syncCalls = countSyncCalls(out, c.window.beginMs, c.window.endMs);
    }
    const firstMem = first.mem;
    const idleMem = second.mem;
    if (!firstMem || !idleMem) throw new Error('memory was not read');
    return {
      engine,
      run,
      figures: {
        firstStartMs: a.ready.sinceProcessStartMs,
        restartMs: b.ready.sinceProcessStartMs,
        firstSpawnToReadyMs: a.spawnToReadyMs,
        restartSpawnToReadyMs: b.spawnToReadyMs,
        syncCallsPerCommit: syncCalls ? total(syncCalls.inWindow) / STORAGE_SIZES.windowWrites : Number.NaN,
        idleRssBytes: idleMem.rssBytes,
        idlePssBytes: idleMem.pssBytes,
        idleProcesses: idleMem.processes,
        firstIdleRssBytes: firstMem.rssBytes,
        firstIdlePssBytes: firstMem.pssBytes,
        sequentialWritesPerSecond: b.sequential?.writesPerSecond ?? Number.NaN,
        sequentialP50Ms: b.sequential?.p50Ms ?? Number.NaN,
        sequentialP99Ms: b.sequential?.p99Ms ?? Number.NaN,
        concurrentWritesPerSecond: b.concurrent?.writesPerSecond ?? Number.NaN,
        concurrentP50Ms: b.concurrent?.p50Ms ?? Number.NaN,
        concurrentP99Ms: b.concurrent?.p99Ms ?? Number.NaN,
      },
      firstMemory: firstMem,
      idleMemory: idleMem,
      syncCalls,
      commands: { firstStart: probeCommand(firstJob), restart: probeCommand(writesJob), ...(straceCommand ? { strace: straceCommand } : {}) },
    };
  } finally {
    dir.dispose();
  }
}
