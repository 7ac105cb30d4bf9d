/**
 * Agents behind NATs reach each other (docs/protocol.md "Paths between
 * peers", "Relays"): real `fleetplane serve` replicas (two, sharing
 * PostgreSQL and Redis) on the lab's "internet" and real `fleetplane agent
 * --dataplane linux` (wireguard-go) behind Linux NATs that drop what their
 * LAN did not ask for:
 *
 *   ea (endpoint-independent): h1        eb (endpoint-independent): h2, h4
 *   sy (symmetric, fully random): h3
 *
 * Each case waits on its condition with the limit as the deadline,
 * and checks what WireGuard uses (its endpoint) as well as that packets pass.
 * Needs root: runs in CI, skips loudly elsewhere.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FleetplaneClient } from '../../src/client/index.js';
import WebSocket from 'ws';
import { RELAY_CLOSE_CODES, ROUTES, STUN_DEFAULT_ALT_PORT, STUN_DEFAULT_PORT, type Device } from '../../src/protocol/index.js';
import { createNatLab, natLabAvailable, type LabNode, type NatLab } from '../support/nat-lab.js';
import { createDatabase, startPostgres, type PostgresServer } from '../support/postgres-server.js';
import { startRedis, type RedisServer } from '../support/redis-server.js';
import { hasPostgres, hasRedis, requireBinary } from '../support/binaries.js';
import { until } from './support/harness.js';
import { ensureBuilt, spawnFleetplane, spawnNode, waitForOutput, type Proc } from './support/processes.js';
import { FORWARDER_SOURCE, TCP_TO_UNIX_SOURCE, unixSocketFetch } from './support/unix-fetch.js';

const enabled =
  natLabAvailable('The NAT traversal test', ['wg', 'wireguard-go', 'conntrack', 'ping'], 'iproute2 nftables wireguard-tools wireguard-go conntrack iputils-ping') &&
  requireBinary('PostgreSQL (postgresql) and Redis (redis-server)', hasPostgres() && hasRedis());

const WG_PORT = 51820;
const ADMIN = 'fpa_paths_e2e';
const SECRET = 'paths-e2e-private-secret-0123456789';
const HOSTS = ['h1', 'h2', 'h3', 'h4'] as const;
/** `rd`: a host with a public address, started later as the relay device. */
type HostName = (typeof HOSTS)[number] | 'rd';

interface Replica {
  name: string;
  port: number;
  proc: Proc | undefined;
  client: FleetplaneClient;
  /** `GET /metrics` of this replica. */
  metrics: () => Promise<string>;
  /** The unix socket forwarded to its API port. */
  socket: string;
}

describe.runIf(enabled)('agents behind NATs: direct, local and relayed paths (real replicas and agents, network namespaces)', () => {
  let lab: NatLab;
  let pg: PostgresServer | undefined;
  let redis: RedisServer | undefined;
  const procs: Proc[] = [];
  /** What carries the replicas to PostgreSQL and Redis: stopped after the replicas, whose stop still talks to both. */
  const storeForwarders: Proc[] = [];
  const replicas: Replica[] = [];
  const agents = new Map<HostName, Proc>();
  const interfaces = new Map<HostName, string>();
  let work = '';
  /** The admin client of a replica still running (one is killed on purpose). */
  const admin = {
    get devices() {
      return live().client.devices;
    },
    get relays() {
      return live().client.relays;
    },
    get organizations() {
      return live().client.organizations;
    },
    get registrationKeys() {
      return live().client.registrationKeys;
    },
    get securityGroups() {
      return live().client.securityGroups;
    },
  };
  function live(): Replica {
    const r = replicas.find((x) => x.proc !== undefined && x.proc.child.exitCode === null && x.proc.child.signalCode === null);
    if (!r) throw new Error('no replica running');
    return r;
  }
  let org = '';
  let joinedAt = 0;
  let registrationKey = '';
  let dbUrl = '';
  const stunFlags = ['--stun-port', String(STUN_DEFAULT_PORT), '--stun-alt-port', String(STUN_DEFAULT_ALT_PORT)];

  const host = (h: HostName): LabNode => (h === 'rd' ? lab.publicHost('rd') : lab.host(h));

  async function devices(): Promise<Map<string, Device>> {
    const items = (await admin.devices.list(org)).items;
    return new Map(items.map((d) => [d.hostname.replace(/^paths-/, ''), d]));
  }

  async function device(h: HostName): Promise<Device> {
    const d = (await devices()).get(h);
    if (!d) throw new Error(`no device for ${h}`);
    return d;
  }

  /** The endpoint h's WireGuard uses for `peer` now (`wg show <if> endpoints`). */
  async function endpointOf(h: HostName, peer: HostName): Promise<string | null> {
    const key = (await device(peer)).public_key;
    const out = await host(h).run.run('wg', ['show', interfaces.get(h) ?? '', 'endpoints']);
    const line = out.stdout.split('\n').find((l) => l.startsWith(key));
    const endpoint = line?.split('\t')[1]?.trim();
    return endpoint === undefined || endpoint === '(none)' ? null : endpoint;
  }

  async function pings(from: HostName, to: HostName): Promise<boolean> {
    const ip = (await device(to)).tunnel_ip;
    try {
      await host(from).run.run('ping', ['-c', '1', '-W', '1', ip]);
      return true;
    } catch {
      return false;
    }
  }

  /** Waits until `from` pings `to` and `endpoint` holds for what WireGuard uses, both ways' condition checked on `from`. */
  async function connected(from: HostName, to: HostName, endpoint: (e: string | null) => boolean, what: string, timeoutMs: number): Promise<string | null> {
    let last: string | null = null;
    try {
      return await until(async () => {
        last = await endpointOf(from, to);
        return endpoint(last) && (await pings(from, to)) ? { last } : undefined;
      }, what, timeoutMs).then((r) => r.last);
    } catch (err) {
      const log = (h: HostName): string => agents.get(h)?.output().split('\n').filter((l) => /path|relay|stun|STUN|fatal|error/.test(l)).slice(-20).join('\n') ?? '';
      throw new Error(`${String(err)}\nlast endpoint: ${String(last)}\n--- ${from}:\n${log(from)}\n--- ${to}:\n${log(to)}`, { cause: err });
    }
  }

  const isLoopback = (e: string | null): boolean => e !== null && e.startsWith('127.0.0.1:');
  const natOf = (h: HostName): string => (h === 'h1' ? 'ea' : h === 'h3' ? 'sy' : 'eb');

  function startReplica(r: Replica, dbUrl: string, extra: readonly string[]): void {
    r.proc = spawnFleetplane(
      'serve',
      [
        '--host', lab.server.ip, '--port', String(r.port),
        '--database-url', dbUrl, '--redis-url', 'redis://127.0.0.1:16379',
        '--private-port', String(r.port + 1000), '--private-host', '127.0.0.1', '--private-secret', SECRET,
        '--relay-url', `http://${lab.server.ip}:${r.port}`,
        '--admin-token', ADMIN, '--revocation-check-interval', '1', '--log-level', 'info',
        ...extra,
      ],
      { prefix: lab.server.prefix, logFile: join(work, `${r.name}.log`) },
    );
    procs.push(r.proc);
  }

  function startAgent(h: HostName, key: string): void {
    const iface = lab.interfaceName();
    interfaces.set(h, iface);
    const agent = spawnFleetplane(
      'agent',
      [
        '--server', `http://${lab.server.ip}:${replicas[0]?.port ?? 0}`,
        '--org', org,
        '--registration-key', key,
        '--state-dir', join(work, h),
        '--hostname', `paths-${h}`,
        '--dataplane', 'linux',
        '--interface', iface,
        '--listen-port', String(WG_PORT),
        '--cleanup-on-exit',
        '--log-level', 'debug',
      ],
      { prefix: host(h).prefix, logFile: join(work, `${h}.log`) },
    );
    procs.push(agent);
    agents.set(h, agent);
  }

  beforeAll(async () => {
    ensureBuilt();
    work = await mkdtemp(join(tmpdir(), 'fp-paths-'));
    lab = await createNatLab({
      nats: [
        { name: 'ea', kind: 'endpoint-independent', hosts: ['h1'], udpPorts: [20000, 20999] },
        { name: 'eb', kind: 'endpoint-independent', hosts: ['h2', 'h4'], udpPorts: [21000, 21999] },
        { name: 'sy', kind: 'symmetric', hosts: ['h3'] },
      ],
      publicHosts: ['rd'],
    });
    pg = await startPostgres();
    redis = await startRedis();
    // PostgreSQL and Redis listen outside the lab; the replicas reach them through their unix sockets.
    for (const [port, socket] of [[15432, pg.socketPath], [16379, redis.socketPath]] as const) {
      const fwd = spawnNode(['-e', TCP_TO_UNIX_SOURCE, '127.0.0.1', String(port), socket], { prefix: lab.server.prefix });
      storeForwarders.push(fwd);
      await waitForOutput(fwd, /forwarding/);
    }
    dbUrl = (await createDatabase(pg.adminUrl, 'paths')).replace(`127.0.0.1:${pg.port}`, '127.0.0.1:15432');
    for (const [i, name] of ['r1', 'r2'].entries()) {
      const port = 8080 + i;
      const socket = join(work, `${name}.sock`);
      const fetch = unixSocketFetch(socket);
      const baseUrl = `http://${lab.server.ip}:${port}`;
      const metrics = async (): Promise<string> => (await fetch(`${baseUrl}/metrics`, { method: 'GET' })).text();
      const r: Replica = { name, port, proc: undefined, client: new FleetplaneClient({ baseUrl, token: ADMIN, fetch }), metrics, socket };
      replicas.push(r);
      // One STUN responder is enough (both would bind the same ports); the second replica runs relay and API only.
      startReplica(r, dbUrl, i === 0 ? stunFlags : ['--stun=false']);
    }
    // The replicas start together, as a deployment's do (the migrations run once between them).
    await Promise.all(
      replicas.map(async (r) => {
        await waitForOutput(r.proc as Proc, /listening on/, 90_000);
        const fwd = spawnNode(['-e', FORWARDER_SOURCE, r.socket, lab.server.ip, String(r.port)], { prefix: lab.server.prefix });
        procs.push(fwd);
        await waitForOutput(fwd, /forwarding/);
      }),
    );
    await until(async () => ((await admin.relays.list()).items.length === 2 ? true : undefined), 'both relays listed', 30_000);
    org = (await admin.organizations.create({ name: 'paths' })).id;
    const key = await admin.registrationKeys.create(org, { description: 'paths', single_use: false });
    registrationKey = key.key;
    for (const h of HOSTS) startAgent(h, key.key);
    // Joined: every agent applied its first state (its WireGuard runs).
    await until(async () => {
      const all = await devices();
      return HOSTS.every((h) => all.get(h)?.status.applied_revision != null) || undefined;
    }, 'every agent to apply its first state', 120_000);
    joinedAt = Date.now();
  }, 300_000);

  afterAll(async () => {
    await Promise.all([...agents.values()].map((p) => p.stop(10_000)));
    await Promise.all(procs.map((p) => p.stop(5_000)));
    await Promise.all(storeForwarders.map((p) => p.stop(5_000)));
    await lab?.destroy();
    await redis?.dispose();
    pg?.stop();
    // FLEETPLANE_KEEP_TEST_LOGS=1 keeps the replicas' and agents' logs for a look after a failure.
    if (work && process.env['FLEETPLANE_KEEP_TEST_LOGS'] !== '1') await rm(work, { recursive: true, force: true });
    else if (work) process.stderr.write(`logs kept in ${work}\n`);
  }, 60_000);

  it('two endpoint-independent NATs: a direct path, NAT to NAT, within 10 s of both agents joining', async () => {
    const left = Math.max(1, 10_000 - (Date.now() - joinedAt));
    const viaNat = (e: string | null): boolean => e !== null && e.startsWith(`${lab.nat('eb').ip}:`);
    await connected('h1', 'h2', viaNat, 'h1 to reach h2 directly through eb\'s public address', left);
    expect(await endpointOf('h2', 'h1')).toMatch(new RegExp(`^${lab.nat('ea').ip.replace(/\./g, '\\.')}:20\\d{3}$`));
  }, 30_000);

  it('two hosts behind one NAT: the local path', async () => {
    await connected('h2', 'h4', (e) => e === `${host('h4').ip}:${WG_PORT}`, 'h2 to reach h4 at its LAN address', 20_000);
    expect(await endpointOf('h4', 'h2')).toBe(`${host('h2').ip}:${WG_PORT}`);
  }, 30_000);

  it('either side symmetric: connected through the relay within 15 s of both agents joining', async () => {
    const left = Math.max(1, 15_000 - (Date.now() - joinedAt));
    await connected('h3', 'h1', isLoopback, 'h3 to reach h1 through the relay', left);
    await connected('h1', 'h3', isLoopback, 'h1 to reach h3 through the relay', 5_000);
  }, 30_000);

  it('every path is reported: direct with the endpoint in use, relay with its replica', async () => {
    const byId = new Map([...(await devices()).entries()].map(([h, d]) => [d.id, h]));
    const peersOf = async (h: HostName) => new Map(((await device(h)).status.peers ?? []).map((p) => [byId.get(p.device_id ?? '') ?? '?', p]));
    const h1 = await until(async () => {
      const peers = await peersOf('h1');
      return peers.get('h2')?.path === 'direct' && peers.get('h3')?.path === 'relay' ? peers : undefined;
    }, 'h1\'s path report', 40_000).catch(async (err: unknown) => {
      const log = agents.get('h1')?.output().split('\n').filter((l) => /status|path|peers/i.test(l)).slice(-15).join('\n');
      throw new Error(`${String(err)}\nh1's status: ${JSON.stringify((await device('h1')).status)}\nh1's log:\n${log}`, { cause: err });
    });
    expect(h1.get('h2')?.endpoint).toBe(await endpointOf('h1', 'h2'));
    expect(h1.get('h2')?.latest_handshake).not.toBeNull();
    expect(h1.get('h3')).toMatchObject({ via: 'server', endpoint: null });
    expect(h1.get('h3')?.relay_id).toMatch(/.+/);
  }, 60_000);

  it('the replica holding a relay session is killed: the pair is relayed again within 10 s', async () => {
    await connected('h3', 'h1', isLoopback, 'h3 and h1 relayed', 20_000);
    const h1id = (await device('h1')).id;
    // The path is up before h3's next status says through which relay: wait for the report, not only the path.
    const relayId = await until(async () => (await device('h3')).status.peers?.find((p) => p.device_id === h1id)?.relay_id ?? undefined, "h3 to report h1's relay", 40_000);
    const listed = (await admin.relays.list()).items;
    const holder = listed.find((e) => e.id === relayId);
    expect(holder, `h3's relay ${String(relayId)} among ${JSON.stringify(listed)}`).toBeDefined();
    const victim = replicas.find((r) => holder?.url === `http://${lab.server.ip}:${r.port}`);
    expect(victim).toBeDefined();
    victim?.proc?.child.kill('SIGKILL');
    await victim?.proc?.exit;
    await connected('h3', 'h1', isLoopback, 'h3 to reach h1 through the other relay', 10_000);
    // Back, for the cases after this one (the agents' API server may have been the one killed).
    if (victim) {
      startReplica(victim, dbUrl, victim === replicas[0] ? stunFlags : ['--stun=false']);
      await waitForOutput(victim.proc as Proc, /listening on/, 90_000);
      // Every agent follows the organization again (its watch may have been on the killed replica) before the next case.
      // The first requests may meet a replica still taking its connections back: retried until one is answered.
      const { revision } = await until(() => admin.securityGroups.create(org, { description: 'after the restart' }).catch(() => undefined), 'a write after the restart', 30_000);
      await until(async () => {
        const all = await devices();
        return HOSTS.every((h) => (all.get(h)?.status.applied_revision ?? 0) >= revision) || undefined;
      }, 'every agent to apply a change made after the restart', 90_000);
    }
    // Its own waits bound it (the 10 s target is the one above); the restart after them takes up to a couple of minutes on a loaded machine.
  }, 240_000);

  it('a relay device: a pair a symmetric NAT keeps apart goes through it instead of the server relay', async () => {
    startAgent('rd', registrationKey);
    const rd = await until(async () => {
      const d = (await devices()).get('rd');
      return d && d.status.applied_revision != null && d.endpoints.some((e) => e.source === 'stun') ? d : undefined;
    }, 'the relay device to join and publish its address', 60_000);
    await admin.devices.update(org, rd.id, { relay: true });
    const h1 = await device('h1');
    /** `from` has no peer of `to` any more: `to`'s tunnel address is on the relay device's peer. */
    const routedThroughRd = (from: HostName, to: Device) =>
      until(async () => {
        const out = await host(from).run.run('wg', ['show', interfaces.get(from) ?? '', 'allowed-ips']);
        const rdLine = out.stdout.split('\n').find((l) => l.startsWith(rd.public_key)) ?? '';
        return !out.stdout.includes(to.public_key) && rdLine.includes(`${to.tunnel_ip}/32`) ? true : undefined;
      }, `${from} to route ${to.hostname} through the relay device`, 30_000);
    await routedThroughRd('h3', h1);
    // And the way back: until h1 routes h3 through the relay device too, h3 drops h1's answers.
    await routedThroughRd('h1', await device('h3'));
    await until(() => pings('h3', 'h1').then((ok) => ok || undefined), 'h3 to ping h1 through the relay device', 30_000);
    // Through the relay device's WireGuard, directly: h3's endpoint for it is its public address, not the server relay.
    expect(await endpointOf('h3', 'rd')).toBe(`${host('rd').ip}:${WG_PORT}`);
    expect(await pings('h1', 'h3')).toBe(true);
    const report = await until(async () => (await device('h3')).status.peers?.find((p) => p.device_id === h1.id && p.via === `device:${rd.id}` && p.path === 'relay'), 'h3 to report h1 via the relay device', 40_000);
    expect(report.path).toBe('relay');
  }, 120_000);

  it('a device token is revoked: its relay session ends', async () => {
    const running = live();
    // h3's agent stops (it would take its session back, superseding ours), and a session of h3's own, opened
    // with its token, stays: nothing but the server can end it.
    await agents.get('h3')?.stop(10_000);
    const identity = JSON.parse(await readFile(join(work, 'h3', 'device.json'), 'utf8')) as { device_token: string };
    const ws = new WebSocket(`ws+unix://${running.socket}:${ROUTES.relay}`, { headers: { authorization: `Bearer ${identity.device_token}` } });
    const closed = new Promise<number>((resolve) => ws.on('close', (code) => resolve(code)));
    ws.on('error', () => undefined);
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('unexpected-response', (_req, res) => reject(new Error(`relay session refused: ${res.statusCode ?? 0}`)));
    });
    await admin.devices.delete(org, (await device('h3')).id);
    const code = await Promise.race([closed, new Promise<number>((r) => setTimeout(() => r(-1), 20_000))]);
    expect(code).toBe(RELAY_CLOSE_CODES.revoked);
  }, 60_000);

  // Last: forgetting its flows also cuts h1's connections to the server without a word (the NAT drops what
  // would end them), and h1 notices its watch is gone only after its silence limit (45 s). A case after this
  // one that needs h1 to follow the organization would wait that out.
  it('a NAT that remaps its ports and forgets its flows: connectivity back within 30 s', async () => {
    const ea = lab.nat('ea');
    await connected('h1', 'h2', (e) => e !== null && !isLoopback(e), 'h1 and h2 direct before the remap', 20_000);
    await ea.setKind('endpoint-independent', [30000, 30999]);
    await ea.forgetFlows();
    // Traffic keeps flowing from h1 (as an application would), so a broken path shows.
    await connected('h1', 'h2', (e) => e !== null, 'h1 to reach h2 again after its NAT remapped', 30_000);
    await connected('h2', 'h1', (e) => e !== null, 'h2 to reach h1 again', 5_000);
  }, 60_000);
});
