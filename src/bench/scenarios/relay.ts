import { execFileSync } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fmt, fmtBytes, fmtSpread } from '../format.js';
import { log } from '../log.js';
import { machineInfo } from '../machine.js';
import { NAT_LAB_TOOLS } from '../netns/nat-lab.js';
import { machineSeconds, measureFlows, type FlowRun, type FlowRunRecord } from '../measure/relay-iperf.js';
import { sleep } from '../../util/sleep.js';
import { socketBuffers, type SocketBuffers, type UdpSocket } from '../measure/relay-buffers.js';
import { startRelayLab, type PathKind, type RelayLab } from '../measure/relay-lab.js';
import type { Scenario, ScenarioFlag, ScenarioResult, Table, TargetResult } from '../scenario.js';
import { skipped } from '../scenario.js';
import { ROUTES } from '../../protocol/index.js';
import { spread, type Spread } from '../stats.js';

/** The issue's goal for one TCP flow through the relay. */
const RELAY_ONE_FLOW_MBIT = 200;
/** Node runs the relay on one thread: near one core it is what limits the flows. */
const RELAY_BOTTLENECK_CORES = 0.9;
const DEFAULT_SECONDS = 10;
const WARMUP_SECONDS = 2;
const FLOW_COUNTS = [1, 10] as const;
const PATHS: readonly PathKind[] = ['direct', 'relay'];
const PATH_UP_MS = 60_000;
const BASELINE_MS = 5_000;

const CPU_PROF_FLAG: ScenarioFlag = {
  name: '--relay-cpu-prof',
  value: 'DIR',
  help: 'write Node CPU profiles of the server and the four agents to DIR (node --cpu-prof; the whole run, startup included; DIR/roles.json says which pid is which)',
  check: (v) => (v.trim() === '' ? 'a directory' : undefined),
};

const SECONDS_FLAG: ScenarioFlag = {
  name: '--iperf-seconds',
  value: 'N',
  help: `seconds of each iperf3 run (default ${DEFAULT_SECONDS})`,
  check: (v) => (/^\d+$/.test(v) && Number(v) >= 1 && Number(v) <= 120 ? undefined : 'a number of seconds from 1 to 120'),
};

/** Commands the scenario runs, with the Debian package of each. */
const TOOLS: readonly (readonly [string, string])[] = [
  ...NAT_LAB_TOOLS.map((t) => [t, t === 'nft' ? 'nftables' : 'iproute2'] as const),
  ['iperf3', 'iperf3'],
  ['wireguard-go', 'wireguard-go'],
  ['wg', 'wireguard-tools'],
  ['conntrack', 'conntrack'],
  ['ping', 'iputils-ping'],
  ['ss', 'iproute2'],
  ['sysctl', 'procps'],
];

function has(command: string): boolean {
  try {
    execFileSync('sh', ['-c', 'command -v "$1"', 'sh', command], { stdio: 'ignore' });
    return true;
  } catch {
    // `command -v` exits non-zero: not on the PATH.
    return false;
  }
}

/** What is missing to run, in words; empty when nothing is. */
function missing(): string[] {
  const out: string[] = [];
  if (process.getuid?.() !== 0) out.push(`root (network namespaces, nftables, WireGuard interfaces; running as uid ${String(process.getuid?.())})`);
  const absent = TOOLS.filter(([t]) => !has(t));
  if (absent.length > 0) out.push(`${absent.map(([t, p]) => `${t} (package ${p})`).join(', ')}`);
  return out;
}

function version(command: string, args: readonly string[]): string {
  try {
    return execFileSync(command, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).split('\n')[0]?.trim() ?? '?';
  } catch {
    return '?';
  }
}

type Figure = Exclude<keyof FlowRun, 'run' | 'path' | 'flows'>;

/** Median (min–max) of one figure over the runs of one case. */
function figure(records: readonly FlowRun[], path: PathKind, flows: number, f: Figure): Spread {
  return spread(records.filter((r) => r.path === path && r.flows === flows).map((r) => r[f]));
}

const cores = (s: Spread): string => fmtSpread(s, (n) => fmt(n, 2));

function label(path: PathKind, flows: number): string {
  return `${path}, ${flows} flow${flows === 1 ? '' : 's'}`;
}

function buffersNote(b: SocketBuffers): string {
  const proxy = b.proxy
    ? `its relay proxy socket ${b.proxy.local} has rb ${fmtBytes(b.proxy.rcvbuf)}, tb ${fmtBytes(b.proxy.sndbuf)}`
    : 'its relay proxy socket was not found in `ss -u -a -m`';
  const wgSocket = (s: UdpSocket): string => {
    const defaults = s.rcvbuf === b.rmemDefault && s.sndbuf === b.wmemDefault ? ' (the defaults: nothing asked for more)' : '';
    return `${s.local} rb ${fmtBytes(s.rcvbuf)}, tb ${fmtBytes(s.sndbuf)}${defaults}`;
  };
  const capped = b.rmemMax < b.requestedBytes || b.wmemMax < b.requestedBytes;
  return (
    `UDP socket buffers on ${b.host} (sysctl and \`ss -u -a -n -m\` in its namespace): the relay proxy asks for ${fmtBytes(b.requestedBytes)} each way ` +
    `(RELAY_SOCKET_BUFFER_BYTES); net.core.rmem_max ${fmtBytes(b.rmemMax)}, wmem_max ${fmtBytes(b.wmemMax)}, rmem_default ${fmtBytes(b.rmemDefault)}, wmem_default ${fmtBytes(b.wmemDefault)}; ` +
    `${proxy} (the kernel grants the request up to the cap and doubles it for its bookkeeping: ss shows the doubled value); ` +
    `wireguard-go's socket: ${b.wireguard.map(wgSocket).join('; ') || 'not found'}. ` +
    (capped ? '!!! the cap is below what the proxy asks for: it got less. !!! ' : '') +
    'The bench leaves these settings as they are.'
  );
}

/** `relay`: iperf3 through the server relay against the direct WireGuard path, real processes in network namespaces (issue 34). */
export const relay: Scenario = {
  name: 'relay',
  summary: 'iperf3 through the server relay vs the direct WireGuard path (real serve and agents, wireguard-go, network namespaces; needs root)',
  inDefault: false,
  flags: [SECONDS_FLAG, CPU_PROF_FLAG],
  timeLimitMs: (o) => 240_000 + o.runs * 4 * ((Number(o.flags[SECONDS_FLAG.name] ?? DEFAULT_SECONDS) + 40) * 1000),
  async run({ opts, signal }): Promise<ScenarioResult> {
    const lacking = missing();
    if (lacking.length > 0) return skipped(`the relay scenario needs ${lacking.join('; ')}`);
    const seconds = Number(opts.flags[SECONDS_FLAG.name] ?? DEFAULT_SECONDS);
    const profileDir = opts.flags[CPU_PROF_FLAG.name];
    if (profileDir !== undefined) await mkdir(profileDir, { recursive: true });
    const idleRtt: Partial<Record<PathKind, number>> = {};
    let baselineBusyCores = Number.NaN;
    const records: FlowRunRecord[] = [];
    const failures: string[] = [];
    const pathErrors: Partial<Record<PathKind, string>> = {};
    let buffers: SocketBuffers[] = [];
    let commands = { serve: '', agent: '' };
    let lab: RelayLab | undefined;
    try {
      lab = await startRelayLab(signal, { cpuProfileDir: profileDir });
      commands = lab.commands;
      if (profileDir !== undefined) {
        const roles: Record<string, string> = { [lab.server.pid]: 'server' };
        for (const pair of Object.values(lab.pairs)) for (const h of [pair.a, pair.b]) roles[h.agent.pid] = `agent ${h.name} (${pair.path} pair)`;
        await writeFile(join(profileDir, 'roles.json'), `${JSON.stringify(roles, null, 2)}\n`);
      }
      const up: PathKind[] = [];
      for (const path of PATHS) {
        try {
          const e = await lab.waitForPath(lab.pairs[path], PATH_UP_MS);
          log.info({ path, endpoints: e }, 'path up');
          await lab.startIperfServer(lab.pairs[path]);
          idleRtt[path] = await lab.idleRttMs(lab.pairs[path]);
          up.push(path);
        } catch (err) {
          signal.throwIfAborted();
          pathErrors[path] = err instanceof Error ? err.message : String(err);
          log.error({ path, err }, 'the pair did not come up on its path: its measurements are left out');
        }
      }
      if (up.includes('relay')) {
        const { a, b } = lab.pairs.relay;
        const e = await lab.endpoints(lab.pairs.relay);
        buffers = [await socketBuffers(a, e.aToB), await socketBuffers(b, e.bToA)];
      }
      // What the machine does without our traffic: other people's work, and the lab idling.
      const m0 = machineSeconds();
      await sleep(BASELINE_MS, signal);
      const m1 = machineSeconds();
      baselineBusyCores = (m1.busy - m0.busy) / (BASELINE_MS / 1000);
      signal.throwIfAborted();
      // Not counted: the first seconds of each path (Node's JIT, TCP's first windows on a fresh tunnel).
      for (const path of up) await measureFlows(lab, lab.pairs[path], 1, WARMUP_SECONDS, 0, signal).catch((err: unknown) => log.warn({ path, err }, 'warm-up run failed'));
      for (let run = 1; run <= opts.runs; run++) {
        for (const flows of FLOW_COUNTS) {
          for (const path of up) {
            try {
              records.push(await measureFlows(lab, lab.pairs[path], flows, seconds, run, signal));
            } catch (err) {
              signal.throwIfAborted();
              const why = `run ${run}, ${label(path, flows)}: ${err instanceof Error ? err.message : String(err)}`;
              failures.push(why);
              log.error({ err }, why);
            }
          }
        }
      }
    } finally {
      await lab?.close();
    }
    return report(records, { seconds, runs: opts.runs, buffers, commands, failures, pathErrors, idleRtt, profileDir, baselineBusyCores });
  },
};

interface ReportInput {
  seconds: number;
  runs: number;
  buffers: SocketBuffers[];
  commands: { serve: string; agent: string };
  failures: string[];
  pathErrors: Partial<Record<PathKind, string>>;
  idleRtt: Partial<Record<PathKind, number>>;
  profileDir: string | undefined;
  baselineBusyCores: number;
}

function report(records: readonly FlowRunRecord[], input: ReportInput): ScenarioResult {
  const { seconds, runs, buffers, commands, failures, pathErrors, idleRtt, profileDir, baselineBusyCores } = input;
  const f = (path: PathKind, flows: number, name: Figure): Spread => figure(records, path, flows, name);
  const cases = FLOW_COUNTS.flatMap((flows) => PATHS.map((path) => ({ path, flows })));

  const main: Table = {
    title: `relay: iperf3 TCP from a to b inside the tunnel, ${seconds} s per run; median (min–max) over ${runs} run(s); Mbit = 10^6 bits; CPU in cores (1 = one core busy for the whole transfer)`,
    columns: ['path', 'Mbit/s', 'retransmits', 'TCP RTT ms', 'server CPU', 'server main thread', 'agent a', 'wireguard-go a', 'agent b', 'wireguard-go b', 'iperf3 client / server', 'machine busy (all cores)', 'of which interrupts', 'load 1 min'],
    rows: cases.map(({ path, flows }) => [
      label(path, flows),
      fmtSpread(f(path, flows, 'mbitPerSecond')),
      fmtSpread(f(path, flows, 'retransmits')),
      fmtSpread(f(path, flows, 'meanRttMs')),
      cores(f(path, flows, 'serverCores')),
      cores(f(path, flows, 'serverMainThreadCores')),
      cores(f(path, flows, 'agentACores')),
      cores(f(path, flows, 'wireguardGoACores')),
      cores(f(path, flows, 'agentBCores')),
      cores(f(path, flows, 'wireguardGoBCores')),
      `${fmt(f(path, flows, 'iperfClientCores').median, 2)} / ${fmt(f(path, flows, 'iperfServerCores').median, 2)}`,
      cores(f(path, flows, 'machineBusyCores')),
      cores(f(path, flows, 'machineInterruptCores')),
      fmtSpread(f(path, flows, 'loadAverage1')),
    ]),
  };
  const cost: Table = {
    title: 'relay: what the server relay did in the relayed runs (bytes of WireGuard packets, both directions, without framing: fleetplane_relay_bytes_total)',
    columns: ['flows', 'relayed', 'server CPU s per Gbit relayed (= cores per Gbit/s)', 'dropped by the relay'],
    rows: FLOW_COUNTS.map((flows) => [
      String(flows),
      fmtSpread(f('relay', flows, 'relayDeliveredBytes'), fmtBytes),
      fmtSpread(f('relay', flows, 'serverCpuSecondsPerGbit')),
      fmtSpread(f('relay', flows, 'relayDroppedBytes'), fmtBytes),
    ]),
  };
  const drops: Table = {
    title: 'relay: UDP datagrams dropped for a full receive buffer during each run, in a\'s / b\'s namespace: all (/proc/net/snmp RcvbufErrors), at WireGuard\'s socket, at the relay proxy sockets (ss -m, sk_drops); median',
    columns: ['path', 'all a / b', 'WireGuard socket a / b', 'relay proxy sockets a / b'],
    rows: cases.map(({ path, flows }) => {
      const ab = (x: Figure, y: Figure): string => `${fmt(f(path, flows, x).median)} / ${fmt(f(path, flows, y).median)}`;
      return [
        label(path, flows),
        ab('udpRcvbufErrorsA', 'udpRcvbufErrorsB'),
        ab('wireguardSocketDropsA', 'wireguardSocketDropsB'),
        ab('proxySocketDropsA', 'proxySocketDropsB'),
      ];
    }),
  };

  const relayOne = f('relay', 1, 'mbitPerSecond');
  const relayTen = f('relay', 10, 'serverCores');
  const relayTenMain = f('relay', 10, 'serverMainThreadCores');
  const notMeasured = (path: PathKind): string => (pathErrors[path] ? `not measured: ${pathErrors[path]?.split('\n')[0] ?? ''}` : 'not measured (every run failed, see the notes)');
  const targets: TargetResult[] = [
    {
      name: `relay, one flow ≥ ${RELAY_ONE_FLOW_MBIT} Mbit/s`,
      target: `one iperf3 TCP flow for ${seconds} s between two agents behind symmetric NATs, through the server relay, in Mbit/s (the issue's goal)`,
      measured: relayOne.median,
      limit: RELAY_ONE_FLOW_MBIT,
      pass: relayOne.median >= RELAY_ONE_FLOW_MBIT,
      detail: Number.isNaN(relayOne.median) ? notMeasured('relay') : `median of ${runs} run(s), ${fmtSpread(relayOne)}; the direct path, same runs: ${fmtSpread(f('direct', 1, 'mbitPerSecond'))}`,
    },
    {
      name: 'the relay is not the bottleneck of 10 flows',
      target: `the relay server uses < ${RELAY_BOTTLENECK_CORES * 100}% of one core during the 10-flow relayed run (Node relays on one thread: at 100% it is the bottleneck), as a fraction of one core`,
      measured: relayTen.median,
      limit: RELAY_BOTTLENECK_CORES,
      pass: relayTen.median < RELAY_BOTTLENECK_CORES,
      detail: Number.isNaN(relayTen.median)
        ? notMeasured('relay')
        : `measured as utime+stime of the serve process and its children (/proc/<pid>/stat) read just before the iperf3 client starts and just after it exits, ` +
          `divided by iperf3's transfer time; ${fmtSpread(relayTen)} over ${runs} run(s), its main thread alone ${fmtSpread(relayTenMain)}; ` +
          `10 flows carried ${fmtSpread(f('relay', 10, 'mbitPerSecond'))} Mbit/s`,
    },
  ];

  const m = machineInfo();
  const notes = [
    `machine: ${m.cores} cores (${m.cpuModel}), Linux ${m.kernel}, Node ${m.node}; shared with other work. Before the runs, with the lab up and idle, the machine was ${fmt(baselineBusyCores, 2)} cores busy over ${BASELINE_MS / 1000} s (/proc/stat): ` +
      'what others ran. The load average in the table is read as each run starts, and counts this bench\'s own processes from the run before.',
    `lab: network namespaces (src/bench/netns/nat-lab.ts): \`${commands.serve}\` on the lab's internet (203.0.113.1); ` +
      `agents \`${commands.agent}\` in each host's namespace, wireguard-go ${version('wireguard-go', ['--version'])}. ` +
      'direct: d1 behind NAT da and d2 behind db, both endpoint-independent (each maps a private port to one public port whatever the destination): the agents punch a direct path, WireGuard\'s endpoint for the peer is the peer\'s NAT. ' +
      `relay: r1 behind ra and r2 behind rb, both symmetric (masquerade fully-random): no direct candidate, WireGuard's endpoint for the peer is 127.0.0.1:<port>, the agent's relay proxy, which sends the packets over its WebSocket session to the server (GET ${ROUTES.relay}) and on to the other agent. ` +
      'Each pair is an organization of its own. Before each run the bench checks the path (`wg show <if> endpoints`, both ways) and after it that it did not change; the pair first has to ping both ways over the tunnel.',
    `throughput: \`iperf3 -s -B <b's tunnel IP>\` in b's namespace, \`iperf3 -c <b's tunnel IP> -t ${seconds} -P <flows> -J\` in a's (${version('iperf3', ['--version'])}); Mbit/s is what the receiver counted (end.sum_received.bits_per_second, all flows). ` +
      `One unmeasured ${WARMUP_SECONDS} s flow on each path first. The order in each run: direct 1 flow, relay 1 flow, direct 10 flows, relay 10 flows.`,
    'CPU: utime+stime from /proc/<pid>/stat, read just before the iperf3 client starts and just after it exits, divided by iperf3\'s transfer time: the server (the serve process and its descendants; its main thread alone from /proc/<pid>/task/<pid>/stat), ' +
      'each agent (its node process, all threads), each wireguard-go daemon (found by name among the host namespace\'s processes: it daemonizes), iperf3 as it reports itself; "machine busy" from /proc/stat (all but idle and iowait, every core). ' +
      'The NATs\' and the kernel\'s packet work (softirq) is charged to whichever process was running, or to nobody in particular: the machine column shows the total.',
    'relay CPU per Gbit/s: the server\'s CPU seconds in a relayed run divided by the gigabits the relay delivered in it (fleetplane_relay_bytes_total{result="delivered"} read from /metrics before and after: the WireGuard packets of both directions, data and ACKs, without the relay framing); the same number is the cores a Gbit/s of relayed traffic costs.',
    `idle round trip over the tunnel (20 pings from a to b, 0.1 s apart, before the runs): ${PATHS.map((p) => `${p} ${fmt(idleRtt[p] ?? Number.NaN)} ms`).join(', ')}; "TCP RTT" in the table is the senders' mean_rtt as iperf3 reports it, during the run.`,
    ...buffers.map(buffersNote),
    ...(profileDir === undefined ? [] : [`CPU profiles (node --cpu-prof) of the server and the agents, for the whole run, are in ${profileDir} (roles.json: which pid is which); profiling slows the processes it profiles, so these figures are not comparable with a run without it.`]),
    ...busiest(records),
    ...Object.entries(pathErrors).map(([path, why]) => `!!! the ${path} pair never came up on its path; its runs were not measured: ${why}`),
    ...failures.map((why) => `!!! failed: ${why}`),
  ];

  return {
    settings: { seconds, idleRttMs: idleRtt, baselineBusyCores, cpuProfileDir: profileDir ?? null, warmupSeconds: WARMUP_SECONDS, flowCounts: FLOW_COUNTS, commands, buffers, targets: { relayOneFlowMbit: RELAY_ONE_FLOW_MBIT, relayBottleneckCores: RELAY_BOTTLENECK_CORES } },
    tables: [main, cost, drops],
    runs: [...records],
    summary: Object.fromEntries(
      cases.map(({ path, flows }) => [
        label(path, flows),
        Object.fromEntries((['mbitPerSecond', 'serverCores', 'serverMainThreadCores', 'agentACores', 'agentBCores', 'wireguardGoACores', 'wireguardGoBCores', 'machineBusyCores', 'serverCpuSecondsPerGbit'] as const).map((k) => [k, f(path, flows, k)])),
      ]),
    ),
    targets,
    notes,
  };
}

/** For each relayed case, the processes on the path from the busiest down: what a flow waits on. */
function busiest(records: readonly FlowRun[]): string[] {
  return FLOW_COUNTS.flatMap((flows) => {
    const of = (k: Figure): number => figure(records, 'relay', flows, k).median;
    if (Number.isNaN(of('mbitPerSecond'))) return [];
    const list: [string, number][] = [
      ['server', of('serverCores')],
      ['agent r1 (sender)', of('agentACores')],
      ['agent r2 (receiver)', of('agentBCores')],
      ['wireguard-go r1', of('wireguardGoACores')],
      ['wireguard-go r2', of('wireguardGoBCores')],
      ['iperf3 client', of('iperfClientCores')],
      ['iperf3 server', of('iperfServerCores')],
    ];
    list.sort((x, y) => y[1] - x[1]);
    const sum = list.reduce((a, [, v]) => a + v, 0);
    return [
      `relay, ${flows} flow${flows === 1 ? '' : 's'}: busiest first (cores, median): ${list.map(([n, v]) => `${n} ${fmt(v, 2)}`).join(', ')}; these together ${fmt(sum, 2)} of the machine's ${fmt(of('machineBusyCores'), 2)} busy cores.`,
    ];
  });
}
