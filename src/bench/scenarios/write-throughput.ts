import type { Scenario, ScenarioResult } from '../scenario.js';
import type { FleetServer } from '../server/fleet-server.js';
import { forEachStorage } from '../server/each-storage.js';
import { hasPostgres, PG_SERVER_SETTINGS, type BenchPostgres } from '../server/postgres.js';
import type { BenchDevice, FleetApi } from '../http-api.js';
import { procTreeStats } from '../proc-stats.js';
import { nowMs } from '../clock.js';
import { percentile, spread, summarize } from '../stats.js';
import { fmt, fmtSpread } from '../format.js';
import { log } from '../log.js';
import { sleep } from '../../util/sleep.js';

const WRITERS = 16;
const ORGS = 100;
const DURATION_MS = 3_000;
const WARMUP_MS = 500;

interface ThroughputFigures {
  writesPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  serverCores: number;
  /** PostgreSQL's own CPU (postmaster and backends), cores; NaN on PGlite (it runs inside the server). */
  databaseCores: number;
  errors: number;
}

interface ThroughputRun {
  backend: string;
  target: 'one org' | `${number} orgs`;
  run: number;
  figures: ThroughputFigures;
}

interface Target {
  org: string;
  device: BenchDevice;
}

/**
 * WRITERS concurrent clients PATCH devices for DURATION_MS (after a warm-up);
 * writer j goes round its own list of targets.
 */
async function drive(api: FleetApi, server: FleetServer, pg: BenchPostgres | undefined, targets: readonly Target[], signal: AbortSignal): Promise<ThroughputFigures> {
  const latencies: number[] = [];
  let errors = 0;
  let measuring = false;
  let stop = false;
  let serial = 0;
  const writer = async (j: number): Promise<void> => {
    const mine = targets.filter((_, i) => i % WRITERS === j);
    for (let i = 0; !stop; i++) {
      const t = mine[i % mine.length];
      if (!t) return;
      const t0 = nowMs();
      try {
        await api.patchDevice(t.org, t.device.id, { hostname: `w-${j}-${serial++}` });
        if (measuring) latencies.push(nowMs() - t0);
      } catch (err) {
        errors++;
        if (errors <= 3) log.warn({ err }, 'write failed');
      }
    }
  };
  const writers = Array.from({ length: WRITERS }, (_, j) => writer(j));
  await sleep(WARMUP_MS, signal);
  signal.throwIfAborted();
  const pgPid = pg?.pid();
  const db0 = pgPid !== undefined ? procTreeStats(pgPid).cpuSeconds : Number.NaN;
  const cpu0 = await server.cpuSeconds(api);
  const t0 = nowMs();
  measuring = true;
  await sleep(DURATION_MS, signal);
  measuring = false;
  signal.throwIfAborted();
  const seconds = (nowMs() - t0) / 1000;
  const done = latencies.length;
  const cpu1 = await server.cpuSeconds(api);
  const db1 = pgPid !== undefined ? procTreeStats(pgPid).cpuSeconds : Number.NaN;
  stop = true;
  await Promise.all(writers);
  return {
    writesPerSecond: done / seconds,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    serverCores: (cpu1 - cpu0) / seconds,
    databaseCores: (db1 - db0) / seconds,
    errors,
  };
}

async function setUp(api: FleetApi): Promise<{ one: Target[]; many: Target[] }> {
  const org = await api.createOrganization(`throughput-one-${process.pid}-${Date.now().toString(36)}`);
  const one: Target[] = [];
  for (let i = 0; i < WRITERS; i++) one.push({ org, device: await api.createDevice(org, `one-${i}`) });
  const many: Target[] = [];
  for (let i = 0; i < ORGS; i++) {
    const o = await api.createOrganization(`throughput-${i}-${process.pid}-${Date.now().toString(36)}`);
    many.push({ org: o, device: await api.createDevice(o, `many-${i}`) });
  }
  return { one, many };
}

/** `write-throughput`: sustained writes per second into one organization and into 100, on PGlite and on PostgreSQL. */
export const writeThroughput: Scenario = {
  name: 'write-throughput',
  summary: `sustained writes/s (${WRITERS} concurrent writers) into 1 organization and into ${ORGS}, on PGlite and on PostgreSQL`,
  inDefault: true,
  timeLimitMs: (o) => 90_000 + o.runs * 25_000,
  async run({ opts, signal }): Promise<ScenarioResult> {
    const runs: ThroughputRun[] = [];
    const notes: string[] = [];
    const servers = await forEachStorage('throughput', WRITERS * 2, notes, async ({ name, server, api, pg }) => {
      const { one, many } = await setUp(api);
      for (let run = 1; run <= opts.runs; run++) {
        for (const [target, list] of [['one org', one], [`${ORGS} orgs`, many]] as const) {
          log.info({ scenario: 'write-throughput', backend: name, target, run }, 'run');
          runs.push({ backend: name, target, run, figures: await drive(api, server, pg, list, signal) });
        }
      }
    });
    const rows: (string | number)[][] = [];
    const summary: Record<string, unknown> = {};
    for (const key of [...new Set(runs.map((r) => `${r.backend}|${r.target}`))]) {
      const of = runs.filter((r) => `${r.backend}|${r.target}` === key);
      const f = summarize(of.map((r) => r.figures));
      summary[key] = f;
      rows.push([
        of[0]?.backend ?? '',
        of[0]?.target ?? '',
        fmtSpread(f.writesPerSecond),
        fmt(f.p50Ms.median),
        fmt(f.p99Ms.median),
        fmt(f.serverCores.median),
        fmt(f.databaseCores.median),
        fmt(spread(of.map((r) => r.figures.errors)).max),
      ]);
    }
    return {
      settings: {
        servers,
        postgresSettings: hasPostgres() ? PG_SERVER_SETTINGS : undefined,
        writers: WRITERS,
        organizations: ORGS,
        durationMs: DURATION_MS,
        warmupMs: WARMUP_MS,
        write: 'PATCH /devices/{id} {hostname: unique}; one org: 16 devices, writer j owns device j; 100 orgs: one device each, writer j owns orgs j, j+16, …',
        client: 'the harness process, keep-alive HTTP, one request in flight per writer',
        watchers: 'none',
      },
      tables: [
        {
          title: `write-throughput: ${WRITERS} writers, ${DURATION_MS / 1000} s per run; median (min–max) over ${opts.runs} runs`,
          columns: ['storage', 'into', 'writes/s', 'p50 ms', 'p99 ms', 'server cores', 'PostgreSQL cores', 'errors'],
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
