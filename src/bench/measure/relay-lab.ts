/**
 * The `relay` scenario's world: the NAT lab (src/bench/netns/nat-lab.ts)
 * with a real `fleetplane serve` on its internet and two pairs of real
 * `fleetplane agent --dataplane linux` behind NATs, each pair an
 * organization of its own (so neither pair peers with the other):
 *
 *   direct: d1 behind da, d2 behind db (both endpoint-independent: the
 *           agents punch a direct path)
 *   relay:  r1 behind ra, r2 behind rb (both symmetric: no direct
 *           candidate, the agents use the server relay)
 */
import { rmSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { FleetplaneClient } from '../../client/index.js';
import { ROUTES, STUN_DEFAULT_ALT_PORT, STUN_DEFAULT_PORT, type Device } from '../../protocol/index.js';
import { sleep } from '../../util/sleep.js';
import { onCleanup } from '../children.js';
import { log } from '../log.js';
import { createNatLab, type LabNode, type NatLab } from '../netns/nat-lab.js';
import { startForwarder, unixSocketFetch } from '../netns/namespace-http.js';
import { NsProcess } from '../netns/ns-process.js';

const CLI = fileURLToPath(new URL('../../cli/main.js', import.meta.url));
const ADMIN_TOKEN = 'bench-relay-admin-token';
const SERVER_PORT = 8080;
export const WG_PORT = 51820;
export const IPERF_PORT = 5201;
const LOOPBACK_ENDPOINT = '127.0.0.1:';

export type PathKind = 'direct' | 'relay';

export interface RelayHost {
  name: string;
  node: LabNode;
  /** The NAT in front of it. */
  natIp: string;
  iface: string;
  agent: NsProcess;
  /** Its device, once it joined. */
  device: Device | undefined;
}

export interface RelayPair {
  path: PathKind;
  org: string;
  /** The iperf3 client's side. */
  a: RelayHost;
  /** The iperf3 server's side. */
  b: RelayHost;
  /** `iperf3 -s` on b's tunnel address, once started. */
  iperfServer: NsProcess | undefined;
}

/** The endpoints WireGuard uses now, each side for the other (`wg show <if> endpoints`); null: none. */
export interface PairEndpoints {
  aToB: string | null;
  bToA: string | null;
}

export interface RelayLab {
  lab: NatLab;
  server: NsProcess;
  /** `fleetplane serve …` and `fleetplane agent …` as started (recorded in results). */
  commands: { serve: string; agent: string };
  api: FleetplaneClient;
  pairs: Record<PathKind, RelayPair>;
  /** The server's Prometheus text. */
  metrics(): Promise<string>;
  endpoints(pair: RelayPair): Promise<PairEndpoints>;
  /** Whether the endpoints are the pair's path: the peer's NAT (direct) or the agent's relay socket on loopback (relay), both ways. */
  onPath(pair: RelayPair, e: PairEndpoints): boolean;
  /** Waits until the pair is on its path and pings both ways over the tunnel; fails after `timeoutMs` with the agents' last lines about paths. */
  waitForPath(pair: RelayPair, timeoutMs: number): Promise<PairEndpoints>;
  /** The mean of 20 pings from a to b over the tunnel, 0.1 s apart, in ms (the path's delay with nothing else on it). */
  idleRttMs(pair: RelayPair): Promise<number>;
  /** Starts `iperf3 -s` on b's tunnel address. */
  startIperfServer(pair: RelayPair): Promise<NsProcess>;
  /** Stops every process (agents first, so that they remove their interfaces), removes the namespaces and the work directory. */
  close(): Promise<void>;
}

/** `h`'s address inside the tunnel. */
export function tunnelIp(h: RelayHost): string {
  const ip = h.device?.tunnel_ip;
  if (ip === undefined) throw new Error(`${h.name} has no device yet`);
  return ip;
}

export interface RelayLabOptions {
  /** Node's CPU profiles of the server and the agents are written here when they exit (`--cpu-prof`). */
  cpuProfileDir?: string | undefined;
}

/** Builds the lab and starts everything; on failure stops what it started and rethrows. */
export async function startRelayLab(signal: AbortSignal, options: RelayLabOptions = {}): Promise<RelayLab> {
  // Node refuses --cpu-prof in NODE_OPTIONS: it goes on the command line.
  const nodeFlags = options.cpuProfileDir === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${options.cpuProfileDir}`];
  const work = await mkdtemp(join(tmpdir(), 'fp-bench-relay-'));
  const processes: NsProcess[] = [];
  let lab: NatLab | undefined;
  const hosts: RelayHost[] = [];
  const pairsList: RelayPair[] = [];
  const interfaces: string[] = [];
  // Killed by a signal, the harness runs this instead of close(): the lab removes its namespaces on exit, and this the sockets wireguard-go leaves when killed, and the work directory.
  const forgetOnExit = onCleanup(() => {
    for (const name of interfaces) rmSync(`/var/run/wireguard/${name}.sock`, { force: true });
    rmSync(work, { recursive: true, force: true });
  });
  const close = async (): Promise<void> => {
    forgetOnExit();
    // Agents first and with time: --cleanup-on-exit deletes the interface, which ends wireguard-go.
    await Promise.all(hosts.map((h) => h.agent.stop(10_000)));
    await Promise.all(pairsList.map((p) => p.iperfServer?.stop(2_000)));
    await Promise.all(processes.map((p) => p.stop(5_000)));
    try {
      await lab?.destroy();
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  };
  try {
    lab = await createNatLab({
      nats: [
        { name: 'da', kind: 'endpoint-independent', hosts: ['d1'], udpPorts: [20000, 20999] },
        { name: 'db', kind: 'endpoint-independent', hosts: ['d2'], udpPorts: [21000, 21999] },
        { name: 'ra', kind: 'symmetric', hosts: ['r1'] },
        { name: 'rb', kind: 'symmetric', hosts: ['r2'] },
      ],
    });
    const theLab = lab;
    const serverIp = theLab.server.ip;
    const serveArgs = [
      'serve', '--memory', '--host', serverIp, '--port', String(SERVER_PORT),
      '--stun-port', String(STUN_DEFAULT_PORT), '--stun-alt-port', String(STUN_DEFAULT_ALT_PORT),
      '--admin-token', ADMIN_TOKEN, '--log-level', 'warn',
    ];
    const server = NsProcess.start(theLab.server.prefix, process.execPath, [...nodeFlags, CLI, ...serveArgs], 'fleetplane serve', { logFile: join(work, 'server.log') });
    processes.push(server);
    await server.waitFor(/listening on/, 90_000, signal);
    const socket = join(work, 'server.sock');
    processes.push(await startForwarder(theLab.server, socket, serverIp, SERVER_PORT));
    const baseUrl = `http://${serverIp}:${SERVER_PORT}`;
    const fetch = unixSocketFetch(socket);
    const api = new FleetplaneClient({ baseUrl, token: ADMIN_TOKEN, fetch });

    const agentArgs = (h: { name: string; iface: string }, org: string, key: string): string[] => [
      'agent', '--server', baseUrl, '--org', org, '--registration-key', key,
      '--state-dir', join(work, h.name), '--hostname', `bench-${h.name}`,
      '--dataplane', 'linux', '--interface', h.iface, '--listen-port', String(WG_PORT),
      '--cleanup-on-exit', '--log-level', 'info',
    ];
    const agentCommand = `fleetplane ${agentArgs({ name: '<host>', iface: '<interface>' }, '<org>', '<registration key>').join(' ').replace(work, '<work>')}`;
    const startPair = async (path: PathKind, names: readonly [string, string], nats: readonly [string, string]): Promise<RelayPair> => {
      const org = (await api.organizations.create({ name: `bench-relay-${path}` })).id;
      const key = (await api.registrationKeys.create(org, { description: `bench relay, ${path} pair`, single_use: false })).key;
      const start = (i: 0 | 1): RelayHost => {
        const name = names[i];
        const node = theLab.host(name);
        const iface = theLab.interfaceName();
        interfaces.push(iface);
        const args = agentArgs({ name, iface }, org, key);
        const agent = NsProcess.start(node.prefix, process.execPath, [...nodeFlags, CLI, ...args], `agent ${name}`, { logFile: join(work, `${name}.log`) });
        const h: RelayHost = { name, node, natIp: theLab.nat(nats[i]).ip, iface, agent, device: undefined };
        hosts.push(h);
        return h;
      };
      const pair: RelayPair = { path, org, a: start(0), b: start(1), iperfServer: undefined };
      pairsList.push(pair);
      return pair;
    };
    const pairs: Record<PathKind, RelayPair> = {
      direct: await startPair('direct', ['d1', 'd2'], ['da', 'db']),
      relay: await startPair('relay', ['r1', 'r2'], ['ra', 'rb']),
    };

    // Joined: each agent applied its first state (its WireGuard runs).
    await until(async () => {
      for (const pair of pairsList) {
        const byName = new Map((await api.devices.list(pair.org)).items.map((d) => [d.hostname, d]));
        for (const h of [pair.a, pair.b]) h.device = byName.get(`bench-${h.name}`);
      }
      return hosts.every((h) => h.device?.status.applied_revision != null) || undefined;
    }, 'every agent to apply its first state', 120_000, signal, hosts);

    const endpoints = async (pair: RelayPair): Promise<PairEndpoints> => ({
      aToB: await endpointOf(pair.a, pair.b),
      bToA: await endpointOf(pair.b, pair.a),
    });
    const onPath = (pair: RelayPair, e: PairEndpoints): boolean =>
      pair.path === 'relay'
        ? (e.aToB?.startsWith(LOOPBACK_ENDPOINT) ?? false) && (e.bToA?.startsWith(LOOPBACK_ENDPOINT) ?? false)
        : (e.aToB?.startsWith(`${pair.b.natIp}:`) ?? false) && (e.bToA?.startsWith(`${pair.a.natIp}:`) ?? false);
    const waitForPath = async (pair: RelayPair, timeoutMs: number): Promise<PairEndpoints> => {
      try {
        await until(async () => {
          const e = await endpoints(pair);
          return onPath(pair, e) && (await pings(pair.a, pair.b)) && (await pings(pair.b, pair.a)) ? true : undefined;
        }, `the ${pair.path} pair (${pair.a.name}, ${pair.b.name}) to reach each other on the ${pair.path} path`, timeoutMs, signal, [pair.a, pair.b]);
      } catch (err) {
        const e = await endpoints(pair).catch(() => undefined);
        const lines = (h: RelayHost): string => h.agent.output.split('\n').filter((l) => /path|relay|stun|fatal|error/i.test(l)).slice(-12).join('\n');
        throw new Error(`${String(err)}\nendpoints: ${JSON.stringify(e)}\n--- ${pair.a.name}:\n${lines(pair.a)}\n--- ${pair.b.name}:\n${lines(pair.b)}`, { cause: err });
      }
      return endpoints(pair);
    };

    return {
      lab: theLab,
      server,
      commands: { serve: `fleetplane ${serveArgs.join(' ')}`, agent: agentCommand },
      api,
      pairs,
      async metrics() {
        const res = await fetch(`${baseUrl}${ROUTES.metrics}`, { method: 'GET' });
        if (res.status !== 200) throw new Error(`metrics: HTTP ${res.status}`);
        return res.text();
      },
      endpoints,
      onPath,
      waitForPath,
      async idleRttMs(pair) {
        const out = await pair.a.node.run.run('ping', ['-c', '20', '-i', '0.1', '-q', tunnelIp(pair.b)]);
        const m = /= [\d.]+\/([\d.]+)\//.exec(out.stdout);
        return m ? Number(m[1]) : Number.NaN;
      },
      async startIperfServer(pair) {
        const p = NsProcess.start(pair.b.node.prefix, 'iperf3', ['-s', '-B', tunnelIp(pair.b), '-p', String(IPERF_PORT), '--forceflush'], `iperf3 -s on ${pair.b.name}`);
        pair.iperfServer = p;
        await p.waitFor(/Server listening/, 10_000, signal);
        return p;
      },
      close,
    };
  } catch (err) {
    for (const h of hosts) {
      const lines = h.agent.output.split('\n').filter((l) => /path|relay|stun|fatal|error|warn/i.test(l)).slice(-15);
      if (lines.length > 0) log.error({ agent: h.name, lines }, 'the agent\'s last path lines');
    }
    await close().catch((cleanupErr: unknown) => log.error({ err: cleanupErr }, 'the relay lab was not removed cleanly'));
    throw err;
  }
}

/** The endpoint `h`'s WireGuard uses for `peer` now; null when it has none. */
async function endpointOf(h: RelayHost, peer: RelayHost): Promise<string | null> {
  const key = peer.device?.public_key;
  if (key === undefined) return null;
  const out = await h.node.run.run('wg', ['show', h.iface, 'endpoints']);
  const endpoint = out.stdout.split('\n').find((l) => l.startsWith(key))?.split('\t')[1]?.trim();
  return endpoint === undefined || endpoint === '(none)' ? null : endpoint;
}

async function pings(from: RelayHost, to: RelayHost): Promise<boolean> {
  try {
    await from.node.run.run('ping', ['-c', '1', '-W', '1', tunnelIp(to)]);
    return true;
  } catch {
    // No answer within a second: not yet connected.
    return false;
  }
}

/** Polls `check` until it returns a value; fails after `timeoutMs` with the agents' last lines about paths. */
async function until<T>(check: () => Promise<T | undefined>, what: string, timeoutMs: number, signal: AbortSignal, agents: readonly RelayHost[]): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    signal.throwIfAborted();
    try {
      const v = await check();
      if (v !== undefined) return v;
    } catch (err) {
      lastError = err;
    }
    for (const h of agents) if (!h.agent.running) throw new Error(`agent ${h.name} exited while waiting for ${what}:\n${h.agent.output.slice(-2000)}`);
    if (Date.now() > deadline) {
      const why = lastError === undefined ? '' : ` (last error: ${String(lastError)})`;
      throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}${why}`);
    }
    await sleep(500, signal);
  }
}
