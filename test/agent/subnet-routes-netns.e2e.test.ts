/**
 * Subnet routes with real traffic: a server and two agents (`--dataplane
 * linux`, wireguard-go, nftables) as real processes, client C and router R,
 * each in a network namespace this test makes, joined by veth pairs to a
 * bridge in the server's namespace; and a host H on a LAN behind R only (a
 * veth pair between R and H). H runs no agent and has no route to the
 * tunnel pool: its answers reach C only because R masquerades. R runs with
 * `--advertise-routes` of the LAN. C reaches H once an admin approves the
 * route (`fleetplane ctl devices approve-routes`), and not before nor after
 * the approval is withdrawn. TEST-NET addresses only. Needs root: runs in
 * CI, skips loudly elsewhere.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FleetplaneClient } from '../../src/client/index.js';
import type { Device } from '../../src/protocol/index.js';
import { until } from './support/harness.js';
import { buildUnderlay, connectsFrom, host, inNamespace, linuxAgentArgs, netnsTestEnabled, startLabServer, pingsFrom, tcpListenerSource, tearDownLab } from './support/netns-lab.js';
import { ensureBuilt, MAIN, spawnFleetplane, spawnNode, waitForOutput, type Proc } from './support/processes.js';

const enabled = netnsTestEnabled(
  'The subnet routes test',
  ['ip', 'wg', 'wireguard-go', 'nft', 'ping', 'sysctl'],
  'wireguard-tools wireguard-go nftables iproute2 iputils-ping procps',
);

// Namespaces, veth names and /var/run/wireguard sockets are machine-wide: unique per run.
const tag = process.pid.toString(36);
const AGENTS = ['c', 'r'] as const;
type Side = (typeof AGENTS)[number] | 'h';
const NS = { srv: `fps-s-${tag}`, c: `fps-c-${tag}`, r: `fps-r-${tag}`, h: `fps-h-${tag}` };
const VETH_AGENT = { c: `fpsc${tag}`, r: `fpsr${tag}` };
const VETH_BRIDGE = { c: `fptc${tag}`, r: `fptr${tag}` };
const LAN_R = `fpsl${tag}`;
const LAN_H = `fpsh${tag}`;
const WG = { c: `fpwc${tag}`, r: `fpwr${tag}` };
const SERVER_IP = '192.0.2.1';
const UNDERLAY = { c: '192.0.2.21', r: '192.0.2.22' };
/** The LAN behind R (TEST-NET-2): R's address on it, and H's. */
const LAN = '198.51.100.0/24';
const LAN_R_IP = '198.51.100.1';
const H_IP = '198.51.100.10';
const SERVER_PORT = 8080;
const WG_PORT = 51820;
const TCP_PORT = 7000;
const ADMIN = 'fpa_subnet_routes_netns_e2e';

const inNs = (side: Side) => inNamespace(NS[side]);
const pings = (from: Side, ip: string, attempts: number) => pingsFrom(NS[from], ip, attempts);
/** A TCP connect from C to H's listener; true when it connects within 1.5 s (of `attempts` tries). */
const cReachesH = (attempts = 1) => connectsFrom(NS.c, H_IP, TCP_PORT, attempts);

describe.runIf(enabled)('subnet routes: a client reaches a host behind a router through the mesh once the route is approved (linux dataplane)', () => {
  let work = '';
  let server: Proc | undefined;
  const helpers: Proc[] = [];
  const agents = new Map<Side, Proc>();
  let admin: FleetplaneClient;
  let org = '';
  const device = new Map<Side, Device>();
  let listener: Proc;

  beforeAll(async () => {
    ensureBuilt();
    work = await mkdtemp(join(tmpdir(), 'fp-subnet-'));
    await buildUnderlay(NS.srv, SERVER_IP, AGENTS.map((side) => ({ ns: NS[side], vethAgent: VETH_AGENT[side], vethBridge: VETH_BRIDGE[side], ip: UNDERLAY[side] })), [NS.h]);
    // The LAN: R and H only. H gets its LAN address and nothing else (no default route, no route to the pool).
    await host.run('ip', ['link', 'add', LAN_R, 'netns', NS.r, 'type', 'veth', 'peer', 'name', LAN_H, 'netns', NS.h]);
    await host.run('ip', ['-n', NS.r, 'addr', 'add', `${LAN_R_IP}/24`, 'dev', LAN_R]);
    await host.run('ip', ['-n', NS.r, 'link', 'set', LAN_R, 'up']);
    await host.run('ip', ['-n', NS.h, 'addr', 'add', `${H_IP}/24`, 'dev', LAN_H]);
    await host.run('ip', ['-n', NS.h, 'link', 'set', LAN_H, 'up']);
    await host.run('ip', ['-n', NS.h, 'link', 'set', 'lo', 'up']);

    const lab = await startLabServer(NS.srv, SERVER_IP, SERVER_PORT, ADMIN, work, ['--bookmark-interval', '1']);
    server = lab.server;
    helpers.push(lab.forwarder);
    admin = lab.admin;
    // H answers every connection and says where it came from: R's LAN address when R masquerades.
    listener = spawnNode(['-e', tcpListenerSource(TCP_PORT)], { prefix: ['ip', 'netns', 'exec', NS.h] });
    helpers.push(listener);
    await waitForOutput(listener, /listening/);
  }, 120_000);

  afterAll(async () => {
    await tearDownLab('subnet routes test', Object.values(NS), AGENTS.map((side) => WG[side]), [...agents.values(), ...helpers], server);
    if (work) await rm(work, { recursive: true, force: true });
  }, 60_000);

  /** Resolves once both agents' dataplanes reflect the head (force-sync through the tunnel answers then). */
  async function bothSynced(): Promise<void> {
    for (const side of AGENTS) await admin.devices.rpc(org, device.get(side)!.id, 'force-sync');
  }

  it('before approval: R requests the LAN, the mesh works, and C cannot reach H', async () => {
    org = (await admin.organizations.create({ name: `subnet-${tag}` })).id;
    const key = await admin.registrationKeys.create(org, { description: 'subnet', single_use: false });
    for (const side of AGENTS) {
      const agent = spawnFleetplane(
        'agent',
        linuxAgentArgs(
          {
            server: `http://${SERVER_IP}:${SERVER_PORT}`,
            org,
            registrationKey: key.key,
            stateDir: join(work, side),
            hostname: `subnet-${side}`,
            wgInterface: WG[side],
            listenPort: WG_PORT,
            endpoint: `${UNDERLAY[side]}:${WG_PORT}`,
          },
          ['--stun=false', ...(side === 'r' ? ['--advertise-routes', LAN] : [])],
        ),
        { prefix: ['ip', 'netns', 'exec', NS[side]], logFile: join(work, `${side}.log`) },
      );
      agents.set(side, agent);
    }
    await until(async () => {
      const c = await admin.convergence(org);
      return c.devices === 2 && c.at_head === 2 ? c : undefined;
    }, 'both agents at the head', 60_000);
    const devices = (await admin.devices.list(org)).items;
    for (const side of AGENTS) device.set(side, devices.find((d) => d.hostname === `subnet-${side}`)!);
    expect(device.get('r')).toMatchObject({ advertise_cidrs: [LAN], approved_cidrs: [] });
    expect(device.get('c')).toMatchObject({ advertise_cidrs: [] });
    // The tunnel itself works (and has its handshake), so what follows is about the route alone.
    expect(await pings('c', device.get('r')!.tunnel_ip, 10)).toBe(true);
    expect(await pings('r', H_IP, 3)).toBe(true);
    expect(await cReachesH()).toBe(false);
  });

  it('after approve-routes: C reaches H through the mesh, masqueraded by R', async () => {
    const ctl = spawnNode(
      [MAIN, 'ctl', 'devices', 'approve-routes', 'subnet-r', '--all', '--org', org, '--server', `http://${SERVER_IP}:${SERVER_PORT}`, '--token', ADMIN],
      { prefix: ['ip', 'netns', 'exec', NS.srv], env: { FLEETPLANE_CONFIG: join(work, 'ctl-config.json') } },
    );
    expect(await ctl.exit, ctl.output()).toMatchObject({ code: 0 });
    expect(ctl.output()).toBe(`approved routes of device subnet-r (${device.get('r')!.id}): ${LAN}\nrequested, not approved: none\n`);
    await bothSynced();
    expect(await cReachesH(3)).toBe(true);
    expect(await pings('c', H_IP, 3)).toBe(true);
    // H saw R's LAN address, not C's tunnel IP: it has no route back to the pool.
    expect(listener.output()).toContain(`from ${LAN_R_IP}\n`);
    expect(listener.output()).not.toContain(`from ${device.get('c')!.tunnel_ip}`);
    const route = await inNs('c').run('ip', ['route', 'show', LAN]);
    expect(route.stdout).toContain(`dev ${WG.c}`);
    expect((await inNs('r').run('sysctl', ['-n', 'net.ipv4.ip_forward'])).stdout.trim()).toBe('1');
    // R does not route its own LAN into its tunnel.
    expect((await inNs('r').run('ip', ['route', 'show', LAN])).stdout).not.toContain(WG.r);
  });

  it('after the approval is withdrawn: C cannot reach H again', async () => {
    await admin.devices.update(org, device.get('r')!.id, { approved_cidrs: [] });
    await bothSynced();
    expect(await cReachesH()).toBe(false);
    expect(await pings('c', H_IP, 2)).toBe(false);
    expect((await inNs('c').run('ip', ['route', 'show', LAN])).stdout).toBe('');
    // The mesh itself is untouched.
    expect(await pings('c', device.get('r')!.tunnel_ip, 3)).toBe(true);
  });
});
