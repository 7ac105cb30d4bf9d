/**
 * One iperf3 measurement over one pair of the relay lab: the throughput, and
 * the CPU of every process on the path over the same window, from /proc.
 */
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { nowMs } from '../clock.js';
import { log } from '../log.js';
import { clockTicks, cpuSecondsOf, procTreeStats } from '../proc-stats.js';
import { promValue } from '../prom-text.js';
import { NsProcess } from '../netns/ns-process.js';
import { isWireguardSocket, udpSockets, type UdpSocket } from './relay-buffers.js';
import { sleep } from '../../util/sleep.js';
import { IPERF_PORT, tunnelIp, type PairEndpoints, type PathKind, type RelayHost, type RelayLab, type RelayPair } from './relay-lab.js';

/** One measurement; CPU figures are in cores (CPU seconds per second of transfer). */
export interface FlowRun {
  run: number;
  path: PathKind;
  flows: number;
  /** The 1-minute load average when it started. */
  loadAverage1: number;
  /** What the receiver counted, in Mbit/s (10^6 bits). */
  mbitPerSecond: number;
  retransmits: number;
  /** TCP's round-trip time as the sender's kernel saw it (iperf3's mean_rtt, mean over the flows), in ms: the path's delay under this load. */
  meanRttMs: number;
  /** The transfer's duration as iperf3 reports it: the denominator of every CPU figure. */
  transferSeconds: number;
  /** From just before the iperf3 client starts to just after it exits. */
  windowSeconds: number;
  serverCores: number;
  /** The server's main thread alone (its event loop, where the relay runs). */
  serverMainThreadCores: number;
  agentACores: number;
  agentBCores: number;
  wireguardGoACores: number;
  wireguardGoBCores: number;
  /** iperf3's own report of its CPU (client on a, server on b). */
  iperfClientCores: number;
  iperfServerCores: number;
  /** The whole machine, every core (from /proc/stat): what else ran shows here. */
  machineBusyCores: number;
  /** Of that, in interrupts (irq + softirq): packet work no process is charged for. */
  machineInterruptCores: number;
  /** Bytes of WireGuard packets the relay delivered (both directions, without framing), and dropped at a bound. */
  relayDeliveredBytes: number;
  relayDroppedBytes: number;
  /** Server CPU seconds per gigabit (10^9 bits) the relay delivered: cores per Gbit/s. NaN on the direct path. */
  serverCpuSecondsPerGbit: number;
  /** UDP datagrams dropped because a socket's receive buffer was full, in a's and b's namespaces (/proc/net/snmp). */
  udpRcvbufErrorsA: number;
  udpRcvbufErrorsB: number;
  /** Of those, dropped at WireGuard's own socket (its listen port) and at the others (the agent's relay proxy sockets), from `ss -m` (sk_drops). */
  wireguardSocketDropsA: number;
  wireguardSocketDropsB: number;
  proxySocketDropsA: number;
  proxySocketDropsB: number;
}

export interface FlowRunRecord extends FlowRun {
  endpointsBefore: PairEndpoints;
  endpointsAfter: PairEndpoints;
  command: string;
}

interface IperfReport {
  error?: string;
  end?: {
    streams?: { sender?: { mean_rtt?: number } }[];
    sum_sent?: { seconds?: number; bytes?: number; retransmits?: number };
    sum_received?: { seconds?: number; bytes?: number; bits_per_second?: number };
    cpu_utilization_percent?: { host_total?: number; remote_total?: number };
  };
}

interface CpuSnapshot {
  at: number;
  server: number;
  serverMain: number;
  agentA: number;
  agentB: number;
  wgA: number;
  wgB: number;
  machineBusy: number;
  machineInterrupts: number;
}

const PATH_WAIT_MS = 30_000;

/** Seconds every core together spent since boot (/proc/stat, first line): busy (all but idle and iowait), and of that in interrupts (irq + softirq: the kernel's packet work). */
export function machineSeconds(): { busy: number; interrupts: number } {
  const first = readFileSync('/proc/stat', 'latin1').split('\n')[0] ?? '';
  const f = first.trim().split(/\s+/).slice(1).map(Number);
  const total = f.slice(0, 8).reduce((a, b) => a + b, 0);
  const hz = clockTicks();
  return { busy: (total - (f[3] ?? 0) - (f[4] ?? 0)) / hz, interrupts: ((f[5] ?? 0) + (f[6] ?? 0)) / hz };
}

function meanRttMs(report: IperfReport): number {
  const rtts = (report.end?.streams ?? []).map((x) => x.sender?.mean_rtt).filter((x): x is number => x !== undefined);
  return rtts.length === 0 ? Number.NaN : rtts.reduce((a, b) => a + b, 0) / rtts.length / 1000;
}

/** The pid of the wireguard-go daemon in `h`'s namespace (it daemonizes: no child of the agent). */
export async function wireguardGoPid(h: RelayHost): Promise<number | undefined> {
  const out = await h.node.run.run('ip', ['netns', 'pids', h.node.ns]).catch(() => ({ stdout: '' }));
  for (const pid of out.stdout.split(/\s+/).filter((p) => p !== '').map(Number)) {
    try {
      if (readFileSync(`/proc/${pid}/comm`, 'latin1').trim() === 'wireguard-go') return pid;
    } catch {
      // Gone since the listing: not the daemon.
    }
  }
  return undefined;
}

interface UdpDrops {
  rcvbufErrors: number;
  wireguard: number;
  others: number;
}

async function udpDrops(h: RelayHost): Promise<UdpDrops> {
  const sockets = await udpSockets(h);
  const sum = (list: readonly UdpSocket[]): number => list.reduce((a, x) => a + x.drops, 0);
  return { rcvbufErrors: await udpRcvbufErrors(h), wireguard: sum(sockets.filter(isWireguardSocket)), others: sum(sockets.filter((x) => !isWireguardSocket(x))) };
}

async function udpRcvbufErrors(h: RelayHost): Promise<number> {
  const text = (await h.node.run.run('cat', ['/proc/net/snmp'])).stdout;
  const lines = text.split('\n').filter((l) => l.startsWith('Udp: '));
  const names = lines[0]?.split(/\s+/) ?? [];
  const values = lines[1]?.split(/\s+/) ?? [];
  const i = names.indexOf('RcvbufErrors');
  return i < 0 ? Number.NaN : Number(values[i]);
}

/** Waits until the pair is on its path; returns the endpoints, and whether it got there. */
async function onItsPath(lab: RelayLab, pair: RelayPair, signal: AbortSignal): Promise<{ endpoints: PairEndpoints; ok: boolean }> {
  const deadline = Date.now() + PATH_WAIT_MS;
  for (;;) {
    const endpoints = await lab.endpoints(pair);
    if (lab.onPath(pair, endpoints)) return { endpoints, ok: true };
    if (Date.now() > deadline) return { endpoints, ok: false };
    await sleep(500, signal);
    signal.throwIfAborted();
  }
}

/**
 * `iperf3 -c <b's tunnel address> -t <seconds> -P <flows> -J` from a, with
 * every process's CPU read just before it starts and just after it exits.
 * Fails when the pair is not on its path before, or left it during the run.
 */
export async function measureFlows(lab: RelayLab, pair: RelayPair, flows: number, seconds: number, run: number, signal: AbortSignal): Promise<FlowRunRecord> {
  const before = await onItsPath(lab, pair, signal);
  if (!before.ok) throw new Error(`the ${pair.path} pair is not on the ${pair.path} path (endpoints ${JSON.stringify(before.endpoints)})`);
  const server = lab.server.pid;
  const [wgA, wgB] = await Promise.all([wireguardGoPid(pair.a), wireguardGoPid(pair.b)]);
  if (wgA === undefined || wgB === undefined) throw new Error(`no wireguard-go in the namespaces of ${pair.a.name} and ${pair.b.name} (kernel WireGuard? this bench measures wireguard-go)`);
  const cpu = (pid: number, tid?: number): number => cpuSecondsOf(pid, tid) ?? Number.NaN;
  const snapshot = (): CpuSnapshot => {
    const machine = machineSeconds();
    return {
      at: nowMs(),
      server: procTreeStats(server).cpuSeconds,
      serverMain: cpu(server, server),
      agentA: cpu(pair.a.agent.pid),
      agentB: cpu(pair.b.agent.pid),
      wgA: cpu(wgA),
      wgB: cpu(wgB),
      machineBusy: machine.busy,
      machineInterrupts: machine.interrupts,
    };
  };
  const relayBytes = (text: string, result: string): number => promValue(text, 'fleetplane_relay_bytes_total', { result });

  const loadAverage1 = Math.round((loadavg()[0] ?? Number.NaN) * 100) / 100;
  const udpA0 = await udpDrops(pair.a);
  const udpB0 = await udpDrops(pair.b);
  const metrics0 = await lab.metrics();
  const args = ['-c', tunnelIp(pair.b), '-p', String(IPERF_PORT), '-t', String(seconds), '-P', String(flows), '-J'];
  const s0 = snapshot();
  const client = NsProcess.start(pair.a.node.prefix, 'iperf3', args, `iperf3 -c on ${pair.a.name}`, { keepStdout: true });
  const timer = setTimeout(() => void client.stop(1_000), (seconds + 30) * 1000);
  const onAbort = (): void => void client.stop(1_000);
  signal.addEventListener('abort', onAbort, { once: true });
  const exit = await client.exit;
  clearTimeout(timer);
  signal.removeEventListener('abort', onAbort);
  const s1 = snapshot();
  const metrics1 = await lab.metrics();
  const udpA1 = await udpDrops(pair.a);
  const udpB1 = await udpDrops(pair.b);
  const after = await lab.endpoints(pair);
  signal.throwIfAborted();

  let report: IperfReport;
  try {
    report = JSON.parse(client.stdout) as IperfReport;
  } catch {
    throw new Error(`iperf3 ${args.join(' ')} exited ${String(exit.code ?? exit.signal)} without a JSON report:\n${client.output.slice(-2000)}`);
  }
  if (report.error !== undefined || exit.code !== 0) throw new Error(`iperf3 ${args.join(' ')} failed: ${report.error ?? `exit ${String(exit.code ?? exit.signal)}`}`);
  if (!lab.onPath(pair, after)) throw new Error(`the ${pair.path} pair left its path during the run: ${JSON.stringify(before.endpoints)} → ${JSON.stringify(after)}`);
  const transferSeconds = report.end?.sum_sent?.seconds ?? seconds;
  const per = (a: number, b: number): number => (b - a) / transferSeconds;
  const delivered = relayBytes(metrics1, 'delivered') - relayBytes(metrics0, 'delivered');
  const serverCpu = s1.server - s0.server;
  const result: FlowRunRecord = {
    run,
    path: pair.path,
    flows,
    loadAverage1,
    mbitPerSecond: (report.end?.sum_received?.bits_per_second ?? Number.NaN) / 1e6,
    retransmits: report.end?.sum_sent?.retransmits ?? Number.NaN,
    meanRttMs: meanRttMs(report),
    transferSeconds,
    windowSeconds: (s1.at - s0.at) / 1000,
    serverCores: serverCpu / transferSeconds,
    serverMainThreadCores: per(s0.serverMain, s1.serverMain),
    agentACores: per(s0.agentA, s1.agentA),
    agentBCores: per(s0.agentB, s1.agentB),
    wireguardGoACores: per(s0.wgA, s1.wgA),
    wireguardGoBCores: per(s0.wgB, s1.wgB),
    iperfClientCores: (report.end?.cpu_utilization_percent?.host_total ?? Number.NaN) / 100,
    iperfServerCores: (report.end?.cpu_utilization_percent?.remote_total ?? Number.NaN) / 100,
    machineBusyCores: per(s0.machineBusy, s1.machineBusy),
    machineInterruptCores: per(s0.machineInterrupts, s1.machineInterrupts),
    relayDeliveredBytes: delivered,
    relayDroppedBytes: relayBytes(metrics1, 'dropped') - relayBytes(metrics0, 'dropped'),
    serverCpuSecondsPerGbit: pair.path === 'relay' && delivered > 0 ? serverCpu / ((delivered * 8) / 1e9) : Number.NaN,
    udpRcvbufErrorsA: udpA1.rcvbufErrors - udpA0.rcvbufErrors,
    udpRcvbufErrorsB: udpB1.rcvbufErrors - udpB0.rcvbufErrors,
    wireguardSocketDropsA: udpA1.wireguard - udpA0.wireguard,
    wireguardSocketDropsB: udpB1.wireguard - udpB0.wireguard,
    proxySocketDropsA: udpA1.others - udpA0.others,
    proxySocketDropsB: udpB1.others - udpB0.others,
    endpointsBefore: before.endpoints,
    endpointsAfter: after,
    command: `iperf3 ${args.join(' ')}`,
  };
  log.info(
    { run, path: pair.path, flows, mbit: Math.round(result.mbitPerSecond), server: result.serverCores.toFixed(2), load: loadAverage1 },
    'iperf3 run done',
  );
  return result;
}
