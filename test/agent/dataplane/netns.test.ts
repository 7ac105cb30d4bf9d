/**
 * The Linux dataplane for real: two network namespaces joined by a veth pair,
 * userspace WireGuard (wireguard-go) and nftables in each. Needs root.
 */
import { existsSync, readdirSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CommandError,
  computeDesiredState,
  createExecRunner,
  LinuxDataplane,
  type CommandRunner,
  type DesiredDataplane,
} from '../../../src/agent/dataplane/index.js';
import type { DeviceObject, Route, SecurityGroup } from '../../../src/protocol/index.js';
import { IN_CI, requireBinary, which } from '../../support/binaries.js';
import { device, deviceId, keyPair, organization, rule, securityGroup } from './fixtures.js';
import { GOLDEN_DIR } from './golden.js';

function rootAvailable(): boolean {
  if (process.getuid?.() === 0) return true;
  const msg = '\n*** The network namespace dataplane test needs root. ***\n';
  if (IN_CI) throw new Error(msg);
  process.stderr.write(`${msg}*** Skipping it because this is not CI. ***\n`);
  return false;
}

const TOOLS = ['ip', 'wg', 'wireguard-go', 'nft', 'ping'];
const enabled =
  requireBinary(`${TOOLS.join(', ')} (wireguard-tools wireguard-go nftables iproute2 iputils-ping)`, TOOLS.every((t) => which(t) !== undefined)) &&
  rootAvailable();

// Unique per run: namespaces and /var/run/wireguard sockets are machine-wide.
const tag = process.pid.toString(36);
const NS = { a: `fpdp-a-${tag}`, b: `fpdp-b-${tag}` };
const VETH = { a: `fpva${tag}`, b: `fpvb${tag}` };
const WG = { a: `fpwa${tag}`, b: `fpwb${tag}` };
const UNDERLAY = { a: '192.168.241.1', b: '192.168.241.2' };
const PORT = 51820;

const host = createExecRunner();
const inNs = (ns: string): CommandRunner => createExecRunner({ prefix: ['ip', 'netns', 'exec', ns] });

/** Device 1 lives in namespace a, device 2 in namespace b. */
const devices = (groupOfB: string | null = null): DeviceObject[] => [
  device(1, { endpoints: [{ source: 'local', address: `${UNDERLAY.a}:${PORT}` }] }),
  device(2, { endpoints: [{ source: 'local', address: `${UNDERLAY.b}:${PORT}` }], security_group_id: groupOfB }),
];

function desiredFor(
  side: 'a' | 'b',
  list: DeviceObject[],
  options: { groups?: SecurityGroup[]; routes?: Route[] } = {},
): DesiredDataplane {
  const n = side === 'a' ? 1 : 2;
  return computeDesiredState({
    deviceId: deviceId(n),
    interfaceName: WG[side],
    privateKey: keyPair(n).privateKey,
    listenPort: PORT,
    organization: organization({ routes: options.routes ?? [] }),
    devices: list,
    securityGroups: options.groups ?? [],
  });
}

async function pings(ns: string, ip: string, attempts: number): Promise<boolean> {
  for (let i = 0; i < attempts; i++) {
    try {
      await inNs(ns).run('ping', ['-n', '-c', '1', '-W', '1', ip]);
      return true;
    } catch (error) {
      if (!(error instanceof CommandError)) throw error;
    }
  }
  return false;
}

async function nsPids(ns: string): Promise<number[]> {
  const out = await host.run('ip', ['netns', 'pids', ns]).catch(() => ({ stdout: '' }));
  return out.stdout.split(/\s+/).filter((p) => p !== '').map(Number);
}

async function waitUntil(check: () => Promise<boolean>, attempts = 50): Promise<boolean> {
  for (let i = 0; i < attempts; i++) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return false;
}

describe.runIf(enabled)('LinuxDataplane in network namespaces (wireguard-go, nftables)', () => {
  const dp = {
    a: new LinuxDataplane({ interfaceName: WG.a, runner: inNs(NS.a) }),
    b: new LinuxDataplane({ interfaceName: WG.b, runner: inNs(NS.b) }),
  };

  beforeAll(async () => {
    await host.run('ip', ['netns', 'add', NS.a]);
    await host.run('ip', ['netns', 'add', NS.b]);
    await host.run('ip', ['link', 'add', VETH.a, 'netns', NS.a, 'type', 'veth', 'peer', 'name', VETH.b, 'netns', NS.b]);
    for (const side of ['a', 'b'] as const) {
      await host.run('ip', ['-n', NS[side], 'addr', 'add', `${UNDERLAY[side]}/24`, 'dev', VETH[side]]);
      await host.run('ip', ['-n', NS[side], 'link', 'set', 'dev', VETH[side], 'up']);
      await host.run('ip', ['-n', NS[side], 'link', 'set', 'dev', 'lo', 'up']);
    }
  });

  afterAll(async () => {
    const problems: unknown[] = [];
    for (const side of ['a', 'b'] as const) {
      await dp[side].cleanup().catch((e: unknown) => problems.push(e));
      // Whatever still runs in the namespace (a wireguard-go that didn't exit) was started by this test.
      for (const pid of await nsPids(NS[side])) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch (error) {
          problems.push(error);
        }
      }
      await host.run('ip', ['netns', 'del', NS[side]]).catch((e: unknown) => problems.push(e));
      // A daemon killed above leaves its socket; the name is this run's own.
      await rm(`/var/run/wireguard/${WG[side]}.sock`, { force: true }).catch((e: unknown) => problems.push(e));
    }
    if (problems.length > 0) process.stderr.write(`netns test cleanup problems: ${problems.map(String).join('; ')}\n`);
  });

  it('the rendered rulesets (golden files) pass `nft -c`', async () => {
    const files = readdirSync(GOLDEN_DIR).filter((f) => f.startsWith('nftables-'));
    expect(files.length).toBeGreaterThan(0);
    for (const file of files) await inNs(NS.a).run('nft', ['-c', '-f', join(GOLDEN_DIR, file)]);
  });

  it('brings up a tunnel both ways, with routes, and a second apply changes nothing', async () => {
    const routes = [{ destination: '10.250.0.0/24' }, { destination: 'fd00:250::/64' }];
    const first = await dp.a.apply(desiredFor('a', devices(), { routes }));
    await dp.b.apply(desiredFor('b', devices()));
    expect(first.actions).toContain('interface created (wireguard-go)');

    expect(await pings(NS.a, '100.64.0.2', 10)).toBe(true);
    expect(await pings(NS.b, '100.64.0.1', 10)).toBe(true);

    const shown = await inNs(NS.a).run('ip', ['route', 'show', 'dev', WG.a, 'proto', '70']);
    expect(shown.stdout).toContain('10.250.0.0/24');
    // The canonical forms the dataplane compares must be exactly what the real tools print.
    expect(await dp.a.apply(desiredFor('a', devices(), { routes }))).toEqual({ changed: false, actions: [] });
    expect(await dp.b.apply(desiredFor('b', devices()))).toEqual({ changed: false, actions: [] });

    await dp.a.apply(desiredFor('a', devices()));
    expect((await inNs(NS.a).run('ip', ['-6', 'route', 'show', 'dev', WG.a, 'proto', '70'])).stdout).toBe('');
    expect((await inNs(NS.a).run('ip', ['route', 'show', 'dev', WG.a, 'proto', '70'])).stdout).toBe('');
  });

  it('adds and removes a peer without resetting the existing session, and routes its approved route into the tunnel while it is there', async () => {
    const before = (await dp.a.describe()).peers.find((p) => p.device_id === deviceId(2));
    expect(before?.latest_handshake).not.toBeNull();
    const extra = device(3, { advertise_cidrs: ['10.3.0.0/16'] });
    const added = await dp.a.apply(desiredFor('a', [...devices(), extra]));
    expect(added.actions).toEqual([`peer added ${keyPair(3).publicKey}`, 'route 10.3.0.0/16']);
    expect((await inNs(NS.a).run('ip', ['route', 'show', 'dev', WG.a, 'proto', '70'])).stdout.trim()).toBe('10.3.0.0/16 scope link');
    const during = await dp.a.describe();
    expect(during.peers.map((p) => p.device_id).sort()).toEqual([deviceId(2), deviceId(3)]);
    expect(during.peers.find((p) => p.device_id === deviceId(3))?.allowed_ips).toEqual(['100.64.0.3/32', '10.3.0.0/16']);
    expect(during.peers.find((p) => p.device_id === deviceId(2))?.latest_handshake).toBe(before?.latest_handshake);

    const removed = await dp.a.apply(desiredFor('a', devices()));
    expect(removed.actions).toEqual([`peer removed ${keyPair(3).publicKey}`, 'route 10.3.0.0/16 removed']);
    expect((await inNs(NS.a).run('ip', ['route', 'show', 'dev', WG.a, 'proto', '70'])).stdout).toBe('');
    expect((await dp.a.describe()).peers.map((p) => p.device_id)).toEqual([deviceId(2)]);
    expect(await pings(NS.a, '100.64.0.2', 5)).toBe(true);
  });

  it("enforces the device's security group on the tunnel", async () => {
    const sshOnly = securityGroup(1, [rule('tcp', 22, 22, [])]);
    const result = await dp.b.apply(desiredFor('b', devices(sshOnly.id), { groups: [sshOnly] }));
    expect(result.actions).toEqual(['firewall loaded']);
    expect(await pings(NS.a, '100.64.0.2', 1)).toBe(false);
    // The underlay is another interface: untouched.
    expect(await pings(NS.a, UNDERLAY.b, 2)).toBe(true);

    const icmpFromA = securityGroup(1, [rule('icmp', 0, 0, ['100.64.0.1'])]);
    await dp.b.apply(desiredFor('b', devices(icmpFromA.id), { groups: [icmpFromA] }));
    expect(await pings(NS.a, '100.64.0.2', 5)).toBe(true);

    const icmpFromOthers = securityGroup(1, [rule('icmp', 0, 0, ['100.64.0.3-100.64.0.200'])]);
    await dp.b.apply(desiredFor('b', devices(icmpFromOthers.id), { groups: [icmpFromOthers] }));
    expect(await pings(NS.a, '100.64.0.2', 1)).toBe(false);

    // Outbound rules of b: nothing may leave b on the tunnel, but replies to inbound traffic still do.
    const inboundIcmpNoOutbound = securityGroup(1, [rule('icmp', 0, 0, [])], []);
    await dp.b.apply(desiredFor('b', devices(inboundIcmpNoOutbound.id), { groups: [inboundIcmpNoOutbound] }));
    expect(await pings(NS.a, '100.64.0.2', 5)).toBe(true);
    expect(await pings(NS.b, '100.64.0.1', 1)).toBe(false);

    await dp.b.apply(desiredFor('b', devices()));
    expect(await pings(NS.b, '100.64.0.1', 5)).toBe(true);
  });

  it('cleanup removes the interface, the table and the wireguard-go process', async () => {
    await dp.a.cleanup();
    await expect(inNs(NS.a).run('ip', ['link', 'show', 'dev', WG.a])).rejects.toBeInstanceOf(CommandError);
    await expect(inNs(NS.a).run('nft', ['list', 'table', 'inet', 'fleetplane'])).rejects.toBeInstanceOf(CommandError);
    expect(await waitUntil(async () => (await nsPids(NS.a)).length === 0)).toBe(true);
    expect(await waitUntil(async () => !existsSync(`/var/run/wireguard/${WG.a}.sock`))).toBe(true);
  });
});
