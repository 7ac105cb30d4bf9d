/**
 * A real WireGuard mesh: a server and 3 agents (`--dataplane linux`,
 * wireguard-go, nftables) as real processes, each in a network namespace this
 * test makes, joined by veth pairs to a bridge in the server's namespace
 * (TEST-NET-1 addresses only). Needs root: runs in CI, skips loudly elsewhere.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CommandError } from '../../src/agent/dataplane/index.js';
import type { AgentStatusView } from '../../src/agent/index.js';
import type { FleetplaneClient } from '../../src/client/index.js';
import type { Convergence, Device } from '../../src/protocol/index.js';
import { until } from './support/harness.js';
import { buildUnderlay, connectsFrom, inNamespace, linuxAgentArgs, netnsTestEnabled, startLabServer, pingsFrom, tcpListenerSource, tearDownLab } from './support/netns-lab.js';
import { ensureBuilt, spawnFleetplane, spawnNode, waitForOutput, type Proc } from './support/processes.js';

const enabled = netnsTestEnabled('The agent mesh test', ['ip', 'wg', 'wireguard-go', 'nft', 'ping'], 'wireguard-tools wireguard-go nftables iproute2 iputils-ping');

// Namespaces, veth names and /var/run/wireguard sockets are machine-wide: unique per run.
const tag = process.pid.toString(36);
const SIDES = ['a', 'b', 'c'] as const;
type Side = (typeof SIDES)[number];
const NS = { srv: `fpm-s-${tag}`, a: `fpm-a-${tag}`, b: `fpm-b-${tag}`, c: `fpm-c-${tag}` };
const VETH_AGENT = { a: `fpma${tag}`, b: `fpmb${tag}`, c: `fpmc${tag}` };
const VETH_BRIDGE = { a: `fpna${tag}`, b: `fpnb${tag}`, c: `fpnc${tag}` };
const WG = { a: `fpwa${tag}`, b: `fpwb${tag}`, c: `fpwc${tag}` };
const SERVER_IP = '192.0.2.1';
const UNDERLAY = { a: '192.0.2.11', b: '192.0.2.12', c: '192.0.2.13' };
const SERVER_PORT = 8080;
const WG_PORT = 51820;
const TCP_PORT = 7000;
const ADMIN = 'fpa_mesh_netns_e2e';

const pings = (from: Side, ip: string, attempts: number) => pingsFrom(NS[from], ip, attempts);
/** TCP connect from `from` to ip:TCP_PORT; true when it connects within 1.5 s. */
const connects = (from: Side, ip: string) => connectsFrom(NS[from], ip, TCP_PORT);
/** Whether a and b each connect to ip:TCP_PORT, tried at once: the one that is dropped costs its whole timeout. */
async function connectsBoth(ip: string): Promise<{ a: boolean; b: boolean }> {
  const [a, b] = await Promise.all([connects('a', ip), connects('b', ip)]);
  return { a, b };
}

async function wgPeers(side: Side): Promise<string[]> {
  const out = await inNamespace(NS[side]).run('wg', ['show', WG[side], 'peers']);
  return out.stdout.split('\n').filter((l) => l !== '').sort();
}

describe.runIf(enabled)('a WireGuard mesh of 3 agents in network namespaces (linux dataplane)', () => {
  let work = '';
  let server: Proc | undefined;
  const helpers: Proc[] = [];
  const agents = new Map<Side, Proc>();
  let admin: FleetplaneClient;
  let org = '';
  const device = new Map<Side, Device>();

  beforeAll(async () => {
    ensureBuilt();
    work = await mkdtemp(join(tmpdir(), 'fp-mesh-'));
    await buildUnderlay(NS.srv, SERVER_IP, SIDES.map((side) => ({ ns: NS[side], vethAgent: VETH_AGENT[side], vethBridge: VETH_BRIDGE[side], ip: UNDERLAY[side] })));

    const lab = await startLabServer(NS.srv, SERVER_IP, SERVER_PORT, ADMIN, work, ['--bookmark-interval', '1', '--revocation-check-interval', '0.5']);
    server = lab.server;
    helpers.push(lab.forwarder);
    admin = lab.admin;
  }, 120_000);

  afterAll(async () => {
    await tearDownLab('mesh test', Object.values(NS), SIDES.map((side) => WG[side]), [...agents.values(), ...helpers], server);
    if (work) await rm(work, { recursive: true, force: true });
  }, 60_000);

  const convergence = (): Promise<Convergence> => admin.convergence(org);
  const allAtHead = (n: number, what: string) =>
    until(async () => {
      const c = await convergence();
      return c.devices === n && c.at_head === n ? c : undefined;
    }, what, 60_000);

  it('agents converge, and every agent pings every other over the tunnel', async () => {
    const created = await admin.organizations.create({ name: `mesh-${tag}` });
    org = created.id;
    const key = await admin.registrationKeys.create(org, { description: 'mesh', single_use: false });
    for (const side of SIDES) {
      const agent = spawnFleetplane(
        'agent',
        linuxAgentArgs(
          {
            server: `http://${SERVER_IP}:${SERVER_PORT}`,
            org,
            registrationKey: key.key,
            stateDir: join(work, side),
            hostname: `mesh-${side}`,
            wgInterface: WG[side],
            listenPort: WG_PORT,
            endpoint: `${UNDERLAY[side]}:${WG_PORT}`,
          },
          ['--log-level', 'info'],
        ),
        { prefix: ['ip', 'netns', 'exec', NS[side]], logFile: join(work, `${side}.log`) },
      );
      agents.set(side, agent);
    }
    await allAtHead(3, 'three agents at the head');
    const devices = (await admin.devices.list(org)).items;
    for (const side of SIDES) {
      const d = devices.find((x) => x.hostname === `mesh-${side}`);
      expect(d, `device of ${side}`).toBeDefined();
      device.set(side, d!);
      expect(d!.endpoints).toEqual([{ source: 'manual', address: `${UNDERLAY[side]}:${WG_PORT}` }]);
    }
    for (const from of SIDES) {
      for (const to of SIDES) {
        if (from === to) continue;
        expect(await pings(from, device.get(to)!.tunnel_ip, 10), `${from} pings ${to}`).toBe(true);
      }
    }
    const status = (await admin.devices.rpc(org, device.get('a')!.id, 'status')) as AgentStatusView;
    expect(status).toMatchObject({ device_id: device.get('a')!.id, dataplane: 'linux', peers: 2, apply_error: null, connected: true });
    expect(status.detail?.peers.every((p) => p.latest_handshake !== null)).toBe(true);
  });

  it('a security group allowing only ICMP from one peer drops what it does not allow', async () => {
    const a = device.get('a')!;
    const c = device.get('c')!;
    const listener = spawnNode(['-e', tcpListenerSource(TCP_PORT)], {
      prefix: ['ip', 'netns', 'exec', NS.c],
    });
    helpers.push(listener);
    await waitForOutput(listener, /listening/);
    // Before the group: everything on the tunnel is allowed.
    expect(await connects('a', c.tunnel_ip)).toBe(true);

    const group = await admin.securityGroups.create(org, {
      description: 'icmp from a only',
      inbound_rules: [{ ip_protocol: 'icmp', from_port: 0, to_port: 0, ip_ranges: [a.tunnel_ip] }],
      outbound_rules: [{ ip_protocol: 'any', from_port: 0, to_port: 0, ip_ranges: [] }],
    });
    const attached = await admin.devices.update(org, c.id, { security_group_id: group.id });
    // force-sync through the tunnel answers once c's dataplane reflects the head.
    const synced = (await admin.devices.rpc(org, c.id, 'force-sync')) as { applied_revision: number };
    expect(synced.applied_revision).toBeGreaterThanOrEqual(attached.revision);

    // Independent probes, at once: each that is dropped shows only when its timeout runs out.
    const [aPingsC, bPingsC, aConnectsC, bConnectsC, bPingsA] = await Promise.all([
      pings('a', c.tunnel_ip, 5),
      pings('b', c.tunnel_ip, 2),
      connects('a', c.tunnel_ip),
      connects('b', c.tunnel_ip),
      // The rest of the mesh is untouched.
      pings('b', a.tunnel_ip, 5),
    ]);
    expect(aPingsC, 'a pings c').toBe(true);
    expect(bPingsC, 'b pings c').toBe(false);
    expect(aConnectsC, 'a connects to c').toBe(false);
    expect(bConnectsC, 'b connects to c').toBe(false);
    expect(bPingsA, 'b pings a').toBe(true);
    const rules = await inNamespace(NS.c).run('nft', ['list', 'table', 'inet', 'fleetplane']);
    expect(rules.stdout).toContain(a.tunnel_ip);
    await allAtHead(3, 'the mesh at the head with the group');
  });

  it('a rule naming a tag lets in the peers carrying it and keeps the others out, before and after a membership change', async () => {
    const a = device.get('a')!;
    const b = device.get('b')!;
    const c = device.get('c')!;
    const syncC = async (revision: number): Promise<void> => {
      const synced = (await admin.devices.rpc(org, c.id, 'force-sync')) as { applied_revision: number };
      expect(synced.applied_revision).toBeGreaterThanOrEqual(revision);
    };
    await admin.devices.update(org, a.id, { tags: ['tag:web'] });
    const group = await admin.securityGroups.create(org, {
      name: 'db',
      inbound_rules: [
        { ip_protocol: 'tcp', from_port: TCP_PORT, to_port: TCP_PORT, ip_ranges: [], devices: ['tag:web'] },
        { ip_protocol: 'icmp', from_port: 0, to_port: 0, ip_ranges: [] },
      ],
      outbound_rules: [{ ip_protocol: 'any', from_port: 0, to_port: 0, ip_ranges: [] }],
    });
    await syncC((await admin.devices.update(org, c.id, { security_group_id: group.id })).revision);
    expect(await connectsBoth(c.tunnel_ip)).toEqual({ a: true, b: false });
    // One named set holds the tag's members: the rule names the set, not each peer.
    const before = (await inNamespace(NS.c).run('nft', ['list', 'table', 'inet', 'fleetplane'])).stdout;
    expect(before).toMatch(new RegExp(`set ref0_v4 \\{[^}]*elements = \\{ ${a.tunnel_ip.replaceAll('.', '\\.')} \\}`));
    expect(before).toContain(`ip saddr @ref0_v4 tcp dport ${TCP_PORT} accept`);

    // The tag moves from a to b: two device changes, and c's rule follows them with no change to the group.
    await admin.devices.update(org, a.id, { tags: [] });
    await syncC((await admin.devices.update(org, b.id, { tags: ['tag:web'] })).revision);
    expect(await connectsBoth(c.tunnel_ip)).toEqual({ a: false, b: true });
    const after = (await inNamespace(NS.c).run('nft', ['list', 'table', 'inet', 'fleetplane'])).stdout;
    expect(after).toMatch(new RegExp(`set ref0_v4 \\{[^}]*elements = \\{ ${b.tunnel_ip.replaceAll('.', '\\.')} \\}`));
    await allAtHead(3, 'the mesh at the head after the tag moved');

    // The organization moves to a policy document that admits only tag:ops: c stays in its group (the
    // document's db keeps the group's id), and the agents enforce the document's rules from its one revision.
    const generated = await admin.policy.get(org);
    const document = generated.text.replace('- tag:web', '- tag:ops');
    expect(document).not.toBe(generated.text);
    const applied = await admin.policy.apply(org, document, { ifMatch: generated.etag });
    expect(applied).toMatchObject({ managed: true, applied: true });
    await syncC(applied.revision);
    expect(await connects('b', c.tunnel_ip)).toBe(false);
    await syncC((await admin.devices.update(org, a.id, { tags: ['tag:ops'] })).revision);
    expect(await connectsBoth(c.tunnel_ip)).toEqual({ a: true, b: false });
    await admin.policy.release(org);
    await allAtHead(3, 'the mesh at the head after the policy document');
  });

  it('deleting a device removes it as a peer everywhere, and /convergence reports the rest at the head', async () => {
    const b = device.get('b')!;
    await admin.devices.delete(org, b.id);
    const exitB = await agents.get('b')!.exit;
    expect(exitB.code).toBe(1);
    expect(agents.get('b')!.output()).toMatch(/device_deleted|token_refused/);
    for (const side of ['a', 'c'] as const) {
      await until(async () => !(await wgPeers(side)).includes(b.public_key), `${side} to drop b as a peer`, 30_000);
      expect(await wgPeers(side)).toEqual([device.get(side === 'a' ? 'c' : 'a')!.public_key]);
    }
    const c = await allAtHead(2, 'the two remaining agents at the head');
    expect(c).toMatchObject({ devices: 2, at_head: 2, behind: 0, error: 0, stale: 0 });
    expect(await pings('a', device.get('c')!.tunnel_ip, 5)).toBe(true);
  });

  it('SIGTERM shuts the agents down cleanly and --cleanup-on-exit removes their interface and table', async () => {
    for (const side of ['a', 'c'] as const) {
      const exit = await agents.get(side)!.stop(15_000);
      expect(exit.code).toBe(0);
      await expect(inNamespace(NS[side]).run('ip', ['link', 'show', WG[side]])).rejects.toThrow(CommandError);
      await expect(inNamespace(NS[side]).run('nft', ['list', 'table', 'inet', 'fleetplane'])).rejects.toThrow(CommandError);
    }
  });
});
