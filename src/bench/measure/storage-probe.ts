/**
 * Probe process of the `storage` scenario: opens one storage engine on a
 * data directory the way `fleetplane serve` does (creating it on first use),
 * migrates it, reports how long that took from this process's start, then
 * runs the writes its job asks for through the real Store with a MemoryBus,
 * and closes (stopping PostgreSQL). Its job is one JSON argument
 * (ProbeJob); it reports JSON lines (ProbeEvent) on stdout. When stdin
 * closes (the harness is gone) it closes the storage and exits.
 *
 *   node dist/bench/measure/storage-probe.js '{"engine":"embedded-postgres","dataDir":"/tmp/x",…}'
 */
import { createInterface } from 'node:readline';
import pino from 'pino';
import { migrate, openEmbedded, openPglite, type Database } from '../../server/db/index.js';
import { MemoryBus } from '../../server/bus/index.js';
import { Store } from '../../server/store/index.js';
import { concurrentWrites, createTarget, sequentialWrites, writeOnce, type WriteTarget } from './storage-writes.js';
import { EVENT_PREFIX, STORAGE_ENGINES, type ProbeEvent, type ProbeJob, type StorageEngine } from './storage-probe-messages.js';

const logger = pino({ level: 'warn', base: { service: 'storage-probe' } }, pino.destination(2));

function emit(e: ProbeEvent): void {
  process.stdout.write(`${EVENT_PREFIX}${JSON.stringify(e)}\n`);
}

/** Unix wall-clock milliseconds with sub-millisecond precision (strace -ttt prints the same clock). */
function wallMs(): number {
  return performance.timeOrigin + performance.now();
}

function parseJob(arg: string | undefined): ProbeJob {
  const job = JSON.parse(arg ?? '') as ProbeJob;
  if (!STORAGE_ENGINES.includes(job.engine)) throw new Error(`unknown engine ${String(job.engine)}`);
  if (typeof job.dataDir !== 'string' || job.dataDir === '') throw new Error('no dataDir');
  return job;
}

/** Opens the engine as src/server/server.ts does; `close` also stops an embedded PostgreSQL. */
async function open(engine: StorageEngine, dataDir: string): Promise<Database> {
  if (engine === 'pglite-files') return openPglite(dataDir);
  return (await openEmbedded({ dataDir, logger })).db;
}

let opened: Database | undefined;
let closing: Promise<void> | undefined;

function close(): Promise<void> {
  if (!closing) closing = opened ? opened.close() : Promise.resolve();
  return closing;
}

/** The harness went away (stdin closed) or asked us to stop: close the storage, exit. */
function abandon(why: string): void {
  logger.warn({ why }, 'storage probe stopping early');
  void close().finally(() => process.exit(3));
}

const lines = createInterface({ input: process.stdin });
const continues: (() => void)[] = [];
let finished = false;
lines.on('line', (line) => {
  if (line.trim() === 'continue') continues.shift()?.();
});
lines.on('close', () => {
  if (!finished) abandon('stdin closed');
});
process.once('SIGTERM', () => abandon('SIGTERM'));

function continued(): Promise<void> {
  return new Promise((resolve) => continues.push(resolve));
}

async function main(job: ProbeJob): Promise<void> {
  const t0 = performance.now();
  opened = await open(job.engine, job.dataDir);
  const t1 = performance.now();
  await migrate(opened);
  const t2 = performance.now();
  emit({ event: 'ready', sinceProcessStartMs: t2, openMs: t1 - t0, migrateMs: t2 - t1, pid: process.pid });
  if (job.holdAfterReady) await continued();
  const store = new Store(opened, new MemoryBus());
  if (job.sequentialWrites > 0 || job.windowWrites > 0) {
    const target = await createTarget(store, 'seq');
    for (let i = 0; i < job.warmupWrites; i++) await writeOnce(store, target);
    if (job.sequentialWrites > 0) emit({ event: 'sequential', series: await sequentialWrites(store, target, job.sequentialWrites) });
    if (job.windowWrites > 0) {
      const beginMs = wallMs();
      for (let i = 0; i < job.windowWrites; i++) await writeOnce(store, target);
      emit({ event: 'window', writes: job.windowWrites, beginMs, endMs: wallMs() });
    }
  }
  if (job.concurrentWrites > 0) {
    const targets: WriteTarget[] = [];
    for (let j = 0; j < job.concurrency; j++) targets.push(await createTarget(store, `c${j}`));
    await concurrentWrites(store, targets, Math.max(job.warmupWrites, targets.length));
    emit({ event: 'concurrent', series: await concurrentWrites(store, targets, job.concurrentWrites) });
  }
  const c0 = performance.now();
  await close();
  emit({ event: 'done', closeMs: performance.now() - c0 });
}

main(parseJob(process.argv[2])).then(
  () => {
    finished = true;
    lines.close();
    process.exit(0);
  },
  (err: unknown) => {
    finished = true;
    logger.error({ err }, 'storage probe failed');
    void close()
      .catch(() => undefined)
      .finally(() => process.exit(1));
  },
);
