import type { Scenario, ScenarioResult } from '../scenario.js';
import { forEachStorage } from '../server/each-storage.js';
import { hasPostgres, PG_SERVER_SETTINGS } from '../server/postgres.js';
import { createDevices, type FleetApi } from '../http-api.js';
import { nowMs } from '../clock.js';
import { percentile, summarize } from '../stats.js';
import { fmt, fmtSpread } from '../format.js';
import { log } from '../log.js';

const SIZES = [0, 1_000, 5_000, 10_000] as const;
const SAMPLE = 50;
const GROW_CONCURRENCY = 8;

interface EnrollFigures {
  p50Ms: number;
  p99Ms: number;
}

interface EnrollRun {
  backend: string;
  size: number;
  run: number;
  figures: EnrollFigures;
}

/** SAMPLE device creations one after another: each one's request-to-response time. */
async function sample(api: FleetApi, org: string, tag: string): Promise<EnrollFigures> {
  const latencies: number[] = [];
  for (let i = 0; i < SAMPLE; i++) {
    const t0 = nowMs();
    await api.createDevice(org, `${tag}-${i}`);
    latencies.push(nowMs() - t0);
  }
  return { p50Ms: percentile(latencies, 50), p99Ms: percentile(latencies, 99) };
}

/**
 * `enroll`: the cost of creating a device as its organization grows. A device
 * creation picks the lowest free tunnel IP; that must not get slower with the
 * number of devices already there.
 */
export const enroll: Scenario = {
  name: 'enroll',
  summary: `device creation latency in an organization of ${SIZES.join(', ')} devices, on PGlite and on PostgreSQL`,
  inDefault: false,
  timeLimitMs: (o) => 60_000 + o.runs * 120_000,
  async run({ opts, signal }): Promise<ScenarioResult> {
    const runs: EnrollRun[] = [];
    const notes: string[] = [];
    const servers = await forEachStorage('enroll', GROW_CONCURRENCY * 2, notes, async ({ name, api }) => {
      for (let run = 1; run <= opts.runs; run++) {
        // The default pool (a /16) holds every size; a fresh organization per run starts from 0.
        const org = await api.createOrganization(`enroll-${run}-${process.pid}-${Date.now().toString(36)}`);
        let size = 0;
        for (const target of SIZES) {
          if (signal.aborted) throw new Error('time limit reached');
          if (target > size) await createDevices(api, org, target - size, GROW_CONCURRENCY, `grow-${target}`);
          size = target;
          log.info({ scenario: 'enroll', backend: name, size, run }, 'sample');
          runs.push({ backend: name, size, run, figures: await sample(api, org, `sample-${target}`) });
          size += SAMPLE;
        }
      }
    });
    const rows: (string | number)[][] = [];
    const summary: Record<string, unknown> = {};
    for (const key of [...new Set(runs.map((r) => `${r.backend}|${r.size}`))]) {
      const of = runs.filter((r) => `${r.backend}|${r.size}` === key);
      const f = summarize(of.map((r) => r.figures));
      summary[key] = f;
      rows.push([of[0]?.backend ?? '', of[0]?.size ?? 0, fmtSpread(f.p50Ms), fmt(f.p99Ms.median)]);
    }
    return {
      settings: {
        servers,
        postgresSettings: hasPostgres() ? PG_SERVER_SETTINGS : undefined,
        sizes: SIZES,
        sample: `${SAMPLE} sequential POST /devices after the organization reached each size`,
        grow: `POST /devices with ${GROW_CONCURRENCY} in flight, not measured`,
        network: 'the default pool, 100.64.0.0/16',
      },
      tables: [
        {
          title: `enroll: one device creation in an organization of N devices; median (min–max) over ${opts.runs} runs`,
          columns: ['storage', 'devices already', 'p50 ms', 'p99 ms'],
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
