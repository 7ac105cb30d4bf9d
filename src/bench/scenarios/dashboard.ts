import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chromium, type Page } from 'playwright-core';
import { FleetplaneClient, SharedInformers } from '../../client/index.js';
import type { DeviceStatusInput } from '../../protocol/index.js';
import { nowMs } from '../clock.js';
import { fmt, fmtBytes } from '../format.js';
import { log } from '../log.js';
import type { Scenario, ScenarioFlag, ScenarioResult } from '../scenario.js';
import { skipped } from '../scenario.js';
import { BENCH_ADMIN_TOKEN, FleetServer } from '../server/fleet-server.js';
import { median } from '../stats.js';
import { sleep } from '../../util/sleep.js';

const CHROMIUM = process.env['FLEETPLANE_CHROMIUM'] ?? '/usr/bin/chromium';
const DEFAULT_DEVICES = 10_000;
const CHANGES_PER_SECOND = 10;
const CHANGE_SECONDS = 10;
const SEED_CONCURRENCY = 16;
const TARGET_FIRST_RENDER_MS = 1_000;
const TARGET_LONGEST_TASK_MS = 200;

const DEVICES_FLAG: ScenarioFlag = {
  name: '--devices',
  value: 'N',
  help: `devices in the organization the page shows (default ${DEFAULT_DEVICES})`,
  check: (v) => (/^\d+$/.test(v) && Number(v) >= 1 && Number(v) <= 50_000 ? undefined : 'a number of devices from 1 to 50,000'),
};

interface DashboardRun {
  devices: number;
  /** Navigation start → the first rows painted, and → every device listed (the count shows N). */
  firstRowsMs: number;
  allListedMs: number;
  /** Long tasks (> 50 ms) from navigation to the end of the changes. */
  longTasks: number;
  longestTaskMs: number;
  /** While CHANGES_PER_SECOND changes per second arrive, for CHANGE_SECONDS. */
  framesPerSecond: number;
  longestFrameMs: number;
  changesSent: number;
  heapUsedBytes: number;
}

/** Runs `n` calls of `f`, `limit` at a time. */
async function pool(n: number, limit: number, f: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(limit, n) }, async () => {
    while (next < n) await f(next++);
  }));
}

/** Collected in the page from its first script on: long tasks, and every animation frame's time. */
const PAGE_PROBES = `
  window.__long = [];
  new PerformanceObserver((l) => { for (const e of l.getEntries()) window.__long.push(e.duration); }).observe({ type: 'longtask', buffered: true });
  window.__frames = [];
  const tick = (t) => { window.__frames.push(t); requestAnimationFrame(tick); };
  requestAnimationFrame(tick);
`;

async function measure(page: Page, url: string, org: string, client: FleetplaneClient, ids: readonly string[], n: number): Promise<DashboardRun> {
  await page.addInitScript(PAGE_PROBES);
  await page.goto(`${url}/#/orgs/${org}/devices`);
  await page.waitForSelector('[data-testid="devices-row"]', { timeout: 60_000 });
  const firstRowsMs = await page.evaluate(() => performance.now());
  await page.waitForFunction((count) => document.querySelector('[data-testid="devices-count"]')?.textContent?.includes(`of ${count} devices`) === true && !document.querySelector('[data-testid="devices-count"]')?.textContent?.includes('loading'), n, { timeout: 120_000 });
  const allListedMs = await page.evaluate(() => performance.now());

  // CHANGES_PER_SECOND device changes a second (a hostname each), paced; the page re-renders as they arrive.
  const frameStart = await page.evaluate(() => (window as unknown as { __frames: number[] }).__frames.length);
  const started = nowMs();
  let sent = 0;
  for (let i = 0; i < CHANGES_PER_SECOND * CHANGE_SECONDS; i++) {
    const due = started + (i * 1000) / CHANGES_PER_SECOND;
    const wait = due - nowMs();
    if (wait > 0) await sleep(wait);
    const id = ids[i % ids.length] ?? '';
    void client.devices.update(org, id, { hostname: `renamed-${i}` }).then(() => sent++);
  }
  await sleep(500);
  const frames = await page.evaluate((from) => (window as unknown as { __frames: number[] }).__frames.slice(from), frameStart);
  const seconds = (frames.at(-1) ?? 0) / 1000 - (frames[0] ?? 0) / 1000;
  let longestFrameMs = 0;
  for (let i = 1; i < frames.length; i++) longestFrameMs = Math.max(longestFrameMs, (frames[i] ?? 0) - (frames[i - 1] ?? 0));
  const long = await page.evaluate(() => (window as unknown as { __long: number[] }).__long);
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Performance.enable');
  const metrics = (await cdp.send('Performance.getMetrics')).metrics;
  return {
    devices: n,
    firstRowsMs,
    allListedMs,
    longTasks: long.length,
    longestTaskMs: Math.max(0, ...long),
    framesPerSecond: seconds > 0 ? (frames.length - 1) / seconds : 0,
    longestFrameMs,
    changesSent: sent,
    heapUsedBytes: metrics.find((m) => m.name === 'JSHeapUsedSize')?.value ?? Number.NaN,
  };
}

/**
 * `dashboard`: the devices view of the web dashboard, in Debian's Chromium,
 * with N devices (each with a reported status): time to first render, long
 * tasks, frame rate while changes arrive, and the page's memory.
 */
export const dashboard: Scenario = {
  name: 'dashboard',
  summary: `the dashboard's devices view in Chromium with ${DEFAULT_DEVICES.toLocaleString('en-US')} devices: first render, long tasks, frame rate under ${CHANGES_PER_SECOND} changes/s, page memory`,
  inDefault: false,
  flags: [DEVICES_FLAG],
  timeLimitMs: (o) => 300_000 + o.runs * 120_000,
  async run({ opts, signal }): Promise<ScenarioResult> {
    const n = Number(opts.flags['--devices'] ?? DEFAULT_DEVICES);
    if (!existsSync(CHROMIUM)) return skipped(`Chromium is not installed at ${CHROMIUM} (Debian package chromium, or set FLEETPLANE_CHROMIUM)`);
    const server = await FleetServer.start();
    const runs: DashboardRun[] = [];
    let cold: DashboardRun | undefined;
    const notes: string[] = [];
    try {
      const admin = new FleetplaneClient({ baseUrl: server.url, token: BENCH_ADMIN_TOKEN });
      const org = (await admin.organizations.create({ name: `dashboard-${process.pid}`, network: { ipv4_cidr: '100.64.0.0/16' } })).id;
      log.info({ devices: n }, 'seeding devices with a status each');
      const ids: string[] = new Array<string>(n);
      const head = () => admin.convergence(org).then((c) => c.revision);
      await pool(n, SEED_CONCURRENCY, async (i) => {
        if (signal.aborted) throw new Error('time limit reached');
        const d = await admin.devices.create(org, { hostname: `host-${String(i).padStart(5, '0')}`, public_key: randomBytes(32).toString('base64') });
        ids[i] = d.id;
        const status: DeviceStatusInput = { applied_revision: d.revision, apply_error: i % 97 === 0 ? 'render: injected failure' : null, os: 'linux', agent_version: '0.1.0', local_endpoints: [] };
        await new FleetplaneClient({ baseUrl: server.url, token: d.device_token }).devices.putStatus(org, d.id, status);
        if ((i + 1) % 2000 === 0) log.info({ devices: i + 1, of: n }, 'seeding');
      });
      notes.push(`head revision after seeding: ${await head()}; every 97th device reports an apply error`);
      const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'] });
      const once = async (): Promise<DashboardRun> => {
        const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
        try {
          const page = await context.newPage();
          await page.goto(server.url);
          await page.getByTestId('login-token').fill(BENCH_ADMIN_TOKEN);
          await page.getByTestId('login-submit').click();
          await page.getByTestId('orgs-row').first().waitFor();
          const fresh = await context.newPage();
          await page.close();
          return await measure(fresh, server.url, org, admin, ids, n);
        } finally {
          await context.close();
        }
      };
      // In a real fleet the organization's agents hold watch streams, so its snapshot is in the server's memory when
      // an operator opens the page. Once without any watcher first (the server reads and encodes the organization).
      let keeper: SharedInformers | undefined;
      try {
        log.info('measuring the devices view, nobody else watching');
        cold = await once();
        keeper = new SharedInformers(admin, org);
        keeper.informer('device');
        keeper.start();
        await keeper.informer('device').waitForSync();
        for (let run = 1; run <= opts.runs; run++) {
          log.info({ run }, 'measuring the devices view, the organization watched');
          runs.push(await once());
        }
      } finally {
        await keeper?.stop();
        await browser.close();
      }
    } finally {
      await server.stop();
    }
    const med = (f: (r: DashboardRun) => number): number => median(runs.map(f));
    const firstRows = med((r) => r.firstRowsMs);
    const longest = Math.max(...runs.map((r) => r.longestTaskMs));
    return {
      settings: { devices: n, changesPerSecond: CHANGES_PER_SECOND, changeSeconds: CHANGE_SECONDS, browser: CHROMIUM, viewport: '1280×800', runs: opts.runs },
      tables: [
        {
          title: `dashboard: the devices view with ${n.toLocaleString('en-US')} devices, the organization watched as by its agents (median of ${runs.length}; ms from navigation start, in the page)`,
          columns: ['figure', 'measured', 'target'],
          rows: [
            ['first rows painted', `${fmt(firstRows)} ms`, `< ${TARGET_FIRST_RENDER_MS} ms`],
            ['first rows painted, nobody else watching the organization (once)', cold ? `${fmt(cold.firstRowsMs)} ms` : '–', ''],
            [`all ${n.toLocaleString('en-US')} listed (informer synced, statuses read)`, `${fmt(med((r) => r.allListedMs))} ms`, ''],
            ['long tasks (> 50 ms), navigation → end of changes', `${fmt(med((r) => r.longTasks))}; longest ${fmt(longest)} ms`, `none > ${TARGET_LONGEST_TASK_MS} ms`],
            [`frame rate while ${CHANGES_PER_SECOND} changes/s arrive for ${CHANGE_SECONDS} s`, `${fmt(med((r) => r.framesPerSecond))} fps; longest frame ${fmt(med((r) => r.longestFrameMs))} ms`, ''],
            ['JS heap used (CDP Performance.getMetrics)', fmtBytes(med((r) => r.heapUsedBytes)), ''],
          ],
        },
      ],
      runs: cold ? [{ cold }, ...runs] : runs,
      summary: { firstRowsMs: firstRows, longestTaskMs: longest, coldFirstRowsMs: cold?.firstRowsMs },
      targets: [
        { name: `dashboard, ${n} devices: first render`, target: `< ${TARGET_FIRST_RENDER_MS} ms`, measured: firstRows, limit: TARGET_FIRST_RENDER_MS, pass: firstRows < TARGET_FIRST_RENDER_MS, detail: `${fmt(firstRows)} ms` },
        { name: `dashboard, ${n} devices: longest task`, target: `≤ ${TARGET_LONGEST_TASK_MS} ms`, measured: longest, limit: TARGET_LONGEST_TASK_MS, pass: longest <= TARGET_LONGEST_TASK_MS, detail: `${fmt(longest)} ms` },
      ],
      notes: [
        ...notes,
        'Method: a server process (--memory) seeded through the API, each device reporting a status with its own token; Chromium (playwright-core, headless, 1280×800) signs in with the admin token, then a new page opens #/orgs/<org>/devices. The figures are taken while another client watches the organization (as its agents do in a fleet, so the server has its snapshot in memory); the first page, measured before that watcher starts, is shown on its own. Long tasks from a PerformanceObserver and frame times from a requestAnimationFrame loop, both installed before the page\'s own script; heap from the DevTools protocol.',
      ],
    };
  },
};
