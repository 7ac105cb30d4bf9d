import type { Scenario, ScenarioResult } from '../scenario.js';
import { rawFloorRun, type MemoryFigures } from '../measure/raw-floor-run.js';
import type { FanoutFigures } from '../measure/fanout.js';
import { summarize, type Spread } from '../stats.js';
import { fmtBytes, fmtSpread } from '../format.js';
import { log } from '../log.js';

const CHANGES = 10;

/** `raw-floor`: the minimal node:http server writing one pre-encoded line to N held responses. */
export const rawFloor: Scenario = {
  name: 'raw-floor',
  summary: 'minimal node:http server: one pre-encoded ~400-byte line to N held responses; time and RSS per connection',
  // Its figures are measured again, side by side, inside fanout and idle-memory (the targets use those).
  inDefault: false,
  timeLimitMs: (o) => o.runs * 90_000,
  async run({ opts, signal }): Promise<ScenarioResult> {
    const sizes = [1_000, 10_000];
    const runs: { n: number; run: number; memory: MemoryFigures | undefined; socket?: FanoutFigures; res?: FanoutFigures }[] = [];
    for (let run = 1; run <= opts.runs; run++) {
      for (const n of sizes) {
        log.info({ scenario: 'raw-floor', n, run }, 'run');
        const r = await rawFloorRun({ n, changes: CHANGES, modes: ['socket', 'res'], memory: true, socketsPerWorker: opts.socketsPerWorker, signal });
        runs.push({ n, run, memory: r.memory, ...r.fanout });
      }
    }
    const rows = [];
    const summary: Record<string, unknown> = {};
    for (const n of sizes) {
      const of = runs.filter((r) => r.n === n);
      const sock = summarize(of.map((r) => r.socket).filter((x): x is FanoutFigures => x !== undefined));
      const res = summarize(of.map((r) => r.res).filter((x): x is FanoutFigures => x !== undefined));
      const mem = summarize(of.map((r) => r.memory).filter((x): x is MemoryFigures => x !== undefined));
      summary[String(n)] = { socket: sock, res, memory: mem };
      const ms = (s: Spread | undefined): string => (s ? fmtSpread(s) : '–');
      rows.push([
        n.toLocaleString('en-US'),
        ms(sock.allReceivedMs),
        ms(sock.p50Ms),
        ms(sock.p99Ms),
        ms(res.allReceivedMs),
        ms(sock.cpuUsPerDelivery),
        mem.bytesPerConnection ? fmtSpread(mem.bytesPerConnection, fmtBytes) : '–',
        mem.bytesPerConnectionAfterGc ? fmtSpread(mem.bytesPerConnectionAfterGc, fmtBytes) : '–',
      ]);
    }
    return {
      settings: {
        sizes,
        changesPerRun: CHANGES,
        warmupChanges: 2,
        lineBytes: 'about 400 (device-shaped change line)',
        writeModes: { socket: 'pre-framed chunk written to res.socket', res: 'res.write(line)' },
        trigger: 'IPC message from the harness; latency is from sending it',
        clientWorkers: `ceil(N / ${opts.socketsPerWorker})`,
      },
      tables: [
        {
          title: `raw-floor: ${CHANGES} fires per run, median (min–max) over ${opts.runs} runs; times in ms from the trigger`,
          columns: ['N', 'all received (socket)', 'p50', 'p99', 'all received (res.write)', 'CPU µs/socket', 'RSS/conn', 'RSS/conn after GC'],
          rows,
        },
      ],
      runs,
      summary,
      targets: [],
      notes: ['"socket" writes one pre-framed chunk straight to each socket (what fleetplane does); it is the floor the fanout target is checked against.'],
    };
  },
};
