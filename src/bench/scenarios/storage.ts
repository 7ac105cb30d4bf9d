import type { Scenario, ScenarioResult } from '../scenario.js';
import { machineInfo } from '../machine.js';
import { log } from '../log.js';
import { fmt, fmtSpread } from '../format.js';
import { summarize } from '../stats.js';
import { STORAGE_ENGINES, type StorageEngine } from '../measure/storage-probe-messages.js';
import { STORAGE_SIZES, storageRun, type StorageRun } from '../measure/storage-run.js';
import { straceArgs, straceAvailable, SYNC_CALLS } from '../measure/strace-window.js';
import { storageEnvironment } from '../measure/storage-environment.js';
import { PROBE } from '../measure/storage-probe-run.js';

const MIB = 1024 * 1024;
const S = STORAGE_SIZES;

/** "fsync 1, fdatasync 2" for the calls that occurred (summed over the runs). */
function callList(runs: readonly StorageRun[], which: 'inWindow' | 'wholeRun'): string {
  const sums = new Map<string, number>();
  for (const r of runs) for (const [name, n] of Object.entries(r.syncCalls?.[which] ?? {})) sums.set(name, (sums.get(name) ?? 0) + n);
  const parts = [...sums].filter(([, n]) => n > 0).map(([name, n]) => `${name} ${n}`);
  return parts.length > 0 ? parts.join(', ') : 'none';
}

function engineNotes(engine: StorageEngine, of: readonly StorageRun[], traced: boolean): string[] {
  const f = summarize(of.map((r) => r.figures));
  const last = of[of.length - 1];
  const commands = last ? [...new Set(last.idleMemory.commands)].map((c) => `${c} ×${last.idleMemory.commands.filter((x) => x === c).length}`).join(', ') : '';
  const notes = [
    `${engine}: idle process tree after the restart: ${Math.round(f.idleProcesses.median)} processes (${commands}); after the first start: ` +
      `RSS ${fmtSpread(f.firstIdleRssBytes, (n) => fmt(n / MIB))} MiB, PSS ${fmtSpread(f.firstIdlePssBytes, (n) => fmt(n / MIB))} MiB. ` +
      `Harness spawn → ready: first ${fmtSpread(f.firstSpawnToReadyMs)} ms, restart ${fmtSpread(f.restartSpawnToReadyMs)} ms. ` +
      `Write latency p50/p99: sequential ${fmt(f.sequentialP50Ms.median)}/${fmt(f.sequentialP99Ms.median)} ms, ` +
      `${S.concurrency}-concurrent ${fmt(f.concurrentP50Ms.median)}/${fmt(f.concurrentP99Ms.median)} ms.`,
  ];
  if (traced) {
    const pids = of.map((r) => r.syncCalls?.windowPids ?? 0);
    notes.push(
      `${engine}: sync calls in the ${S.windowWrites}-commit windows, summed over ${of.length} run(s): ${callList(of, 'inWindow')} ` +
        `(from ${Math.max(...pids)} process(es) at most); in the whole traced runs (start, warm-up, window, shutdown): ${callList(of, 'wholeRun')}.`,
    );
  }
  return notes;
}

/** `storage`: the candidate engines for `npm start`'s default storage, each measured in its own probe process. */
export const storage: Scenario = {
  name: 'storage',
  summary: 'default-storage candidates (PGlite files, embedded PostgreSQL): start time, fsync per commit (strace), idle RSS/PSS, writes/s',
  inDefault: false,
  timeLimitMs: (o) => 60_000 + o.runs * 2 * 200_000,
  async run({ opts, signal }): Promise<ScenarioResult> {
    const strace = straceAvailable();
    if (!strace.ok) log.warn({ why: strace.why }, 'strace unavailable: fsync per commit will NOT be measured');
    const env = await storageEnvironment();
    const runs: StorageRun[] = [];
    for (let run = 1; run <= opts.runs; run++) {
      for (const engine of STORAGE_ENGINES) runs.push(await storageRun(engine, run, strace.ok, signal));
    }
    const rows: (string | number)[][] = [];
    const summary: Record<string, unknown> = {};
    const perEngine: string[] = [];
    for (const engine of STORAGE_ENGINES) {
      const of = runs.filter((r) => r.engine === engine);
      if (of.length === 0) continue;
      const f = summarize(of.map((r) => r.figures));
      summary[engine] = f;
      rows.push([
        engine,
        fmtSpread(f.firstStartMs),
        fmtSpread(f.restartMs),
        strace.ok ? fmtSpread(f.syncCallsPerCommit) : 'not measured',
        fmtSpread(f.idleRssBytes, (n) => fmt(n / MIB)),
        fmtSpread(f.idlePssBytes, (n) => fmt(n / MIB)),
        fmtSpread(f.sequentialWritesPerSecond),
        fmtSpread(f.concurrentWritesPerSecond),
      ]);
      perEngine.push(...engineNotes(engine, of, strace.ok));
    }
    const m = machineInfo();
    const traceCmd = `strace ${straceArgs('<temp>/data.strace').join(' ')} node ${PROBE} '<job JSON>'`;
    const notes = [
      `machine: ${m.cores} cores (${m.cpuModel}), ${(m.memoryBytes / 1024 ** 3).toFixed(1)} GiB, Linux ${m.kernel}, Node ${m.node}; ` +
        `data on ${env.tmpdir}: ${env.filesystem}; shared with other work (see the load average below).`,
      `engines: pglite-files = openPglite('<temp>/data') (${env.pgliteVersion}, WASM PostgreSQL inside the node process); ` +
        `embedded-postgres = startEmbeddedPostgres({dataDir: '<temp>/data'}) + openPostgres(url) (pool max 10, as src/server/server.ts opens it; ` +
        `${env.postgresVersion} from @embedded-postgres/<platform>, fsync=on, synchronous_commit=on, full_page_writes=on, other settings default). ` +
        `Each run of each engine uses a fresh directory under ${env.tmpdir} and three probe processes in turn (node ${PROBE} '<job JSON>'), ` +
        `each opening the engine, running migrate(db), doing its job and closing it (PostgreSQL: fast shutdown); the directory is removed afterwards.`,
      `first start ms / restart ms: performance.now() inside the probe when open + migrate() resolved, i.e. from the probe process's start ` +
        `(node boot and module loading included) to "migrated and ready to serve"; first start on the empty directory (embedded-postgres: includes initdb), ` +
        `restart = a second probe on the directory the first one left after a clean close.`,
      strace.ok
        ? `fsync/commit: a third probe on the same directory, run as \`${traceCmd}\` (${strace.version}; -f follows PostgreSQL's processes, children of the probe; ` +
          `-ttt instead of -c so that only calls inside the window count): after ${S.warmupWrites} warm-up writes the probe notes the wall clock, makes ` +
          `${S.windowWrites} sequential committed writes, notes it again; the calls (${SYNC_CALLS.join(' + ')}, from every traced process) whose ` +
          `timestamps fall in that window, divided by ${S.windowWrites}.`
        : `!!! fsync/commit NOT MEASURED: ${strace.why}. Install strace (apt-get install strace) and run again. !!!`,
      `idle RSS MiB / idle PSS MiB: the restarted probe waits ${S.settleMs / 1000} s after ready (no writes yet), then the harness sums over the probe's ` +
        `process tree (node, and for embedded-postgres the postmaster, its auxiliary processes and backends): VmRSS from /proc/<pid>/status ` +
        `(counts PostgreSQL's shared memory and shared libraries once per process that touched them) and Pss from /proc/<pid>/smaps_rollup ` +
        `(shared pages split among their sharers: the tree's real share). The table shows both; PSS is the one to compare.`,
      `writes: each write is the real store.devices.patch(org, device, {hostname: unique}) with a MemoryBus, the transaction PATCH /devices/{id} makes ` +
        `(lock + bump the organization's head_revision, rewrite the device row, commit) followed by its status read. sequential writes/s = ` +
        `${S.sequentialWrites.toLocaleString('en-US')} writes one at a time to one device, after ${S.warmupWrites} warm-up writes; ` +
        `${S.concurrency}-concurrent writes/s = ${S.concurrentWrites.toLocaleString('en-US')} writes by ${S.concurrency} writers at once, ` +
        `writer j patching its own device in its own organization (writes in one organization serialize on its revision row by design), ` +
        `after one warm-up round; measured in the restarted probe, not under strace.`,
      `figures: median (min–max) over ${opts.runs} run(s); the engines alternate within each run.`,
      ...perEngine,
    ];
    return {
      settings: {
        engines: STORAGE_ENGINES,
        sizes: S,
        environment: env,
        strace: strace.ok ? { version: strace.version, command: traceCmd } : { skipped: strace.why },
        commands: runs[0]?.commands,
      },
      tables: [
        {
          title: `storage: default-storage candidates; median (min–max) over ${opts.runs} run(s); fsync/commit = ${SYNC_CALLS.join('+')} calls per commit; MiB = 2^20 bytes`,
          columns: ['engine', 'first start ms', 'restart ms', 'fsync/commit', 'idle RSS MiB', 'idle PSS MiB', 'sequential writes/s', `${S.concurrency}-concurrent writes/s`],
          rows,
        },
      ],
      runs,
      summary,
      targets: [],
      notes,
    };
  },
};
