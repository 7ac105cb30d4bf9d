/**
 * Real agents publish how the internet sees their WireGuard port: a
 * `fleetplane serve` on the lab's "internet" (STUN on its default ports) and
 * two `fleetplane agent --dataplane linux` (wireguard-go), one behind an
 * endpoint-independent NAT (mapping to ports 20000-20999, so the public port
 * is not the local one) and one behind a symmetric NAT (`masquerade
 * fully-random`). The first device gets a `stun` endpoint equal to its NAT's
 * mapping of its WireGuard port and `symmetric_nat` false, and follows the
 * NAT when it remaps; the second gets `symmetric_nat` true. Needs root: runs
 * in CI, skips loudly elsewhere.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FleetplaneClient } from '../../src/client/index.js';
import { STUN_DEFAULT_ALT_PORT, STUN_DEFAULT_PORT, type Device } from '../../src/protocol/index.js';
import { createNatLab, natLabAvailable, type LabNode, type NatLab } from '../support/nat-lab.js';
import { until } from './support/harness.js';
import { ensureBuilt, spawnFleetplane, spawnNode, waitForOutput, type Proc } from './support/processes.js';
import { FORWARDER_SOURCE, unixSocketFetch } from './support/unix-fetch.js';

const enabled = natLabAvailable('The agents-behind-NAT STUN test', ['wg', 'wireguard-go', 'conntrack'], 'iproute2 nftables wireguard-tools wireguard-go conntrack');

const WG_PORT = 51820;
const SERVER_PORT = 8080;
const ADMIN = 'fpa_stun_agents_e2e';
const STUN_INTERVAL_S = 3;

describe.runIf(enabled)('agents behind NATs publish their STUN mapping and symmetric_nat (real server and agents, network namespaces)', () => {
  let lab: NatLab;
  let server: Proc | undefined;
  const procs: Proc[] = [];
  const agents = new Map<string, Proc>();
  let work = '';
  let admin: FleetplaneClient;
  let org = '';

  /** The device whose hostname is `stun-<host>`, once `ready` holds for it. */
  async function deviceOf(h: LabNode, ready: (d: Device) => boolean, what: string, timeoutMs = 30_000): Promise<Device> {
    let last: Device | undefined;
    try {
      return await until(async () => {
        last = (await admin.devices.list(org)).items.find((x) => x.hostname === `stun-${h.name}`);
        return last && ready(last) ? last : undefined;
      }, what, timeoutMs);
    } catch (err) {
      const log = agents.get(h.name)?.output().split('\n').filter((l) => /stun|STUN|endpoints|fatal/.test(l)).slice(-15).join('\n');
      const diag = [
        (await h.run.run('nft', ['list', 'ruleset']).catch((e: unknown) => ({ stdout: String(e) }))).stdout,
        (await h.run.run('conntrack', ['-L', '-p', 'udp']).catch((e: unknown) => ({ stdout: String(e) }))).stdout,
        (await lab.server.run.run('conntrack', ['-L', '-p', 'udp']).catch((e: unknown) => ({ stdout: String(e) }))).stdout,
        server?.output().slice(-3000),
      ].join('\n----\n');
      throw new Error(`${String(err)}\nthe device: ${JSON.stringify(last)}\nthe agent's log:\n${log}\n${diag}`, { cause: err });
    }
  }

  const stunEndpoints = (d: Device): string[] => d.endpoints.filter((e) => e.source === 'stun').map((e) => e.address);

  /** The port the NAT maps h's WireGuard port to, towards the server's first STUN port (from the NAT's conntrack). */
  async function natMappedPort(natName: string, h: LabNode): Promise<number | undefined> {
    const out = await lab.nat(natName).run.run('conntrack', ['-L', '-p', 'udp', '--src', h.ip, '--sport', String(WG_PORT), '--dst', lab.server.ip, '--dport', String(STUN_DEFAULT_PORT)]);
    // Original tuple, then the reply tuple, whose destination port is the public one.
    const ports = [...out.stdout.matchAll(/dport=(\d+)/g)].map((m) => Number(m[1]));
    return ports.length >= 2 ? ports[1] : undefined;
  }

  function startAgent(h: LabNode, key: string): Proc {
    const agent = spawnFleetplane(
      'agent',
      [
        '--server', `http://${lab.server.ip}:${SERVER_PORT}`,
        '--org', org,
        '--registration-key', key,
        '--state-dir', join(work, h.name),
        '--hostname', `stun-${h.name}`,
        '--dataplane', 'linux',
        '--interface', lab.interfaceName(),
        '--listen-port', String(WG_PORT),
        '--status-interval', '2',
        '--stun-interval', String(STUN_INTERVAL_S),
        '--cleanup-on-exit',
        '--log-level', 'debug',
      ],
      { prefix: h.prefix, logFile: join(work, `${h.name}.log`) },
    );
    procs.push(agent);
    agents.set(h.name, agent);
    return agent;
  }

  beforeAll(async () => {
    ensureBuilt();
    work = await mkdtemp(join(tmpdir(), 'fp-stun-agents-'));
    lab = await createNatLab({
      nats: [
        { name: 'eim', kind: 'endpoint-independent', hosts: ['h1'], udpPorts: [20000, 20999] },
        { name: 'sym', kind: 'symmetric', hosts: ['h2'] },
      ],
    });
    // The default STUN ports, named because the test setup sets FLEETPLANE_STUN_PORT=0 for servers run in-process; the agents use their defaults.
    const stunPorts = ['--stun-port', String(STUN_DEFAULT_PORT), '--stun-alt-port', String(STUN_DEFAULT_ALT_PORT)];
    server = spawnFleetplane('serve', ['--memory', '--host', lab.server.ip, '--port', String(SERVER_PORT), ...stunPorts, '--admin-token', ADMIN, '--log-level', 'info'], {
      prefix: lab.server.prefix,
    });
    await waitForOutput(server, /listening on/, 90_000);
    expect(server.output()).toContain(`"stun":{"port":${STUN_DEFAULT_PORT},"altPort":${STUN_DEFAULT_ALT_PORT}}`);
    const socket = join(work, 'server.sock');
    const forwarder = spawnNode(['-e', FORWARDER_SOURCE, socket, lab.server.ip, String(SERVER_PORT)], { prefix: lab.server.prefix });
    procs.push(forwarder);
    await waitForOutput(forwarder, /forwarding/);
    admin = new FleetplaneClient({ baseUrl: `http://${lab.server.ip}:${SERVER_PORT}`, token: ADMIN, fetch: unixSocketFetch(socket) });
    org = (await admin.organizations.create({ name: 'stun-agents' })).id;
    const key = await admin.registrationKeys.create(org, { description: 'stun', single_use: false });
    startAgent(lab.host('h1'), key.key);
    startAgent(lab.host('h2'), key.key);
    // The tests' waits are for STUN, not for start-up: on a loaded machine an agent process took 24 s to log its first line.
    for (const name of ['h1', 'h2']) {
      await until(async () => {
        const d = (await admin.devices.list(org)).items.find((x) => x.hostname === `stun-${name}`);
        return d?.status?.online && d.status.local_endpoints.length > 0;
      }, `the agent on ${name} to report its status`, 120_000);
    }
  }, 300_000);

  afterAll(async () => {
    await Promise.all(procs.map((p) => p.stop(10_000)));
    await server?.stop(5_000);
    await lab?.destroy();
    if (work) await rm(work, { recursive: true, force: true });
  }, 60_000);

  it('behind an endpoint-independent NAT: a stun endpoint equal to the NAT\'s mapping of the WireGuard port, beside the local one, and symmetric_nat false', async () => {
    const h1 = lab.host('h1');
    const eim = lab.nat('eim');
    const d = await deviceOf(h1, (x) => stunEndpoints(x).length > 0, 'h1\'s device to get a stun endpoint');
    const port = await until(() => natMappedPort('eim', h1), 'the NAT\'s flow of h1\'s WireGuard port to the STUN server');
    expect(port).toBeGreaterThanOrEqual(20000);
    expect(port).toBeLessThanOrEqual(20999);
    expect(d.endpoints).toEqual([
      { source: 'stun', address: `${eim.ip}:${port}` },
      { source: 'local', address: `${h1.ip}:${WG_PORT}` },
    ]);
    expect(d.symmetric_nat).toBe(false);
  }, 60_000);

  it('behind `masquerade fully-random`: symmetric_nat true, with the NAT\'s public address in the stun endpoint', async () => {
    const h2 = lab.host('h2');
    const d = await deviceOf(h2, (x) => x.symmetric_nat, 'h2\'s device to get symmetric_nat true');
    expect(stunEndpoints(d)).toHaveLength(1);
    expect(stunEndpoints(d)[0]).toMatch(new RegExp(`^${lab.nat('sym').ip.replace(/\./g, '\\.')}:\\d+$`));
    expect(d.endpoints).toContainEqual({ source: 'local', address: `${h2.ip}:${WG_PORT}` });
  }, 60_000);

  it('a NAT that remaps its ports and forgets its flows: the periodic re-check publishes the new mapping', async () => {
    const h1 = lab.host('h1');
    const eim = lab.nat('eim');
    const before = await deviceOf(h1, (x) => stunEndpoints(x).length > 0, 'h1\'s stun endpoint');
    await eim.setKind('endpoint-independent', [30000, 30999]);
    await eim.forgetFlows();
    const after = await deviceOf(h1, (x) => stunEndpoints(x).some((a) => a.startsWith(`${eim.ip}:30`)), 'h1\'s stun endpoint to move to the new port range', 4 * STUN_INTERVAL_S * 1000 + 10_000);
    const port = await until(() => natMappedPort('eim', h1), 'the NAT\'s new flow');
    expect(stunEndpoints(after)).toEqual([`${eim.ip}:${port}`]);
    expect(after.symmetric_nat).toBe(false);
    expect(after.revision).toBeGreaterThan(before.revision);
  }, 60_000);
});
