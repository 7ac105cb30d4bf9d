import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  computeDesiredState,
  DataplaneAbortedError,
  DataplaneError,
  LinuxDataplane,
  CommandError,
  type DesiredDataplane,
} from '../../../src/agent/dataplane/index.js';
import type { DeviceObject, Route, SecurityGroup } from '../../../src/protocol/index.js';
import { FakeMachine } from './fake-machine.js';
import { device, deviceId, keyPair, organization, rule, securityGroup } from './fixtures.js';

const IF = 'fp0';
const PK = (n: number): string => keyPair(n).publicKey;

function desired(devices: DeviceObject[], options: { groups?: SecurityGroup[]; routes?: Route[]; mtu?: number } = {}): DesiredDataplane {
  return computeDesiredState({
    deviceId: deviceId(1),
    interfaceName: IF,
    privateKey: keyPair(1).privateKey,
    listenPort: 51820,
    organization: organization({ routes: options.routes ?? [], mtu: options.mtu ?? 1420 }),
    devices: [device(1, devices.find((d) => d.id === deviceId(1)) ?? {}), ...devices.filter((d) => d.id !== deviceId(1))],
    securityGroups: options.groups ?? [],
  });
}

const peer = (n: number, overrides: Partial<DeviceObject> = {}): DeviceObject =>
  device(n, { endpoints: [{ source: 'local', address: `192.168.9.${n}:51820` }], ...overrides });

function setup(): { machine: FakeMachine; dp: LinuxDataplane } {
  const machine = new FakeMachine(IF);
  return { machine, dp: new LinuxDataplane({ interfaceName: IF, runner: machine }) };
}

describe('LinuxDataplane on a fresh machine', () => {
  it('creates the interface with wireguard-go when the kernel has no WireGuard, in this order', async () => {
    const { machine, dp } = setup();
    const result = await dp.apply(desired([peer(2)], { routes: [{ destination: '10.9.0.0/16' }] }));
    expect(machine.lines()).toEqual([
      'nft -f <file>',
      `wg show ${IF} dump`,
      `ip link add dev ${IF} type wireguard`,
      `wireguard-go ${IF}`,
      `wg show ${IF} dump`,
      `wg set ${IF} listen-port 51820 private-key <file>`,
      `ip -j addr show dev ${IF}`,
      `ip addr replace 100.64.0.1/16 dev ${IF}`,
      `ip link set dev ${IF} mtu 1420 up`,
      `wg set ${IF} peer ${PK(2)} endpoint 192.168.9.2:51820 persistent-keepalive 25 allowed-ips 100.64.0.2/32`,
      `ip -4 -j route show table main dev ${IF} proto 70`,
      `ip -6 -j route show table main dev ${IF} proto 70`,
      `ip route replace 10.9.0.0/16 dev ${IF} proto 70`,
    ]);
    expect(result.changed).toBe(true);
    expect(dp.backend).toBe('userspace');
    // The daemon must not inherit a LOG_LEVEL that makes it hold our stdout (execFile would hang).
    expect(machine.calls.find((c) => c.command === 'wireguard-go')?.env).toEqual({ LOG_LEVEL: 'silent' });
    expect(machine.iface?.privateKey).toBe(keyPair(1).privateKey);
    expect(machine.nftTable).toContain('iifname "fp0" jump tunnel-in');
  });

  it('never puts the private key on a command line; the 0600 key file is gone afterwards', async () => {
    const { machine, dp } = setup();
    await dp.apply(desired([peer(2)]));
    const key = keyPair(1).privateKey;
    expect(machine.calls.some((c) => c.args.some((a) => a.includes(key)))).toBe(false);
    expect(machine.keyFiles).toHaveLength(1);
    expect(existsSync(machine.keyFiles[0] ?? '')).toBe(false);
    await dp.apply(desired([peer(2)]));
    expect(machine.keyFiles).toHaveLength(1);
  });

  it('uses kernel WireGuard when available', async () => {
    const { machine, dp } = setup();
    machine.kernelWireGuard = true;
    await dp.apply(desired([peer(2)]));
    expect(dp.backend).toBe('kernel');
    expect(machine.lines().some((l) => l.startsWith('wireguard-go'))).toBe(false);
  });
});

describe('LinuxDataplane applies differences', () => {
  async function converged(devices: DeviceObject[]): Promise<{ machine: FakeMachine; dp: LinuxDataplane }> {
    const s = setup();
    await s.dp.apply(desired(devices));
    // Sessions exist: a re-added peer would start again at 0.
    for (const p of s.machine.iface?.peers.values() ?? []) p.handshake = 1_700_000_000;
    s.machine.clearCalls();
    return s;
  }

  it('changes nothing when applied again', async () => {
    const { machine, dp } = await converged([peer(2), peer(3)]);
    const result = await dp.apply(desired([peer(3), peer(2)]));
    expect(result).toEqual({ changed: false, actions: [] });
    expect(machine.mutations()).toEqual([]);
  });

  it('adds a new peer without touching the others', async () => {
    const { machine, dp } = await converged([peer(2), peer(3)]);
    const result = await dp.apply(desired([peer(2), peer(3), peer(4)]));
    expect(machine.mutations()).toEqual([
      `wg set ${IF} peer ${PK(4)} endpoint 192.168.9.4:51820 persistent-keepalive 25 allowed-ips 100.64.0.4/32`,
    ]);
    expect(result.actions).toEqual([`peer added ${PK(4)}`]);
    expect(machine.iface?.peers.get(PK(2))?.handshake).toBe(1_700_000_000);
  });

  it('removes a vanished peer without touching the others', async () => {
    const { machine, dp } = await converged([peer(2), peer(3), peer(4)]);
    await dp.apply(desired([peer(2), peer(4)]));
    expect(machine.mutations()).toEqual([`wg set ${IF} peer ${PK(3)} remove`]);
    expect([...(machine.iface?.peers.keys() ?? [])].sort()).toEqual([PK(2), PK(4)].sort());
    expect(machine.iface?.peers.get(PK(4))?.handshake).toBe(1_700_000_000);
  });

  it('updates only the allowed IPs of a peer whose approved routes change, and routes the new prefix into the tunnel', async () => {
    const { machine, dp } = await converged([peer(2), peer(3)]);
    await dp.apply(desired([peer(2, { advertise_cidrs: ['10.2.0.0/16'] }), peer(3)]));
    expect(machine.mutations()).toEqual([
      `wg set ${IF} peer ${PK(2)} allowed-ips 100.64.0.2/32,10.2.0.0/16`,
      `ip route replace 10.2.0.0/16 dev ${IF} proto 70`,
    ]);
    expect(machine.iface?.peers.get(PK(2))?.handshake).toBe(1_700_000_000);
  });

  it('moves a CIDR between peers in one apply that converges', async () => {
    const { machine, dp } = await converged([peer(2, { advertise_cidrs: ['10.2.0.0/16'] }), peer(3)]);
    await dp.apply(desired([peer(2), peer(3, { advertise_cidrs: ['10.2.0.0/16'] })]));
    expect(machine.iface?.peers.get(PK(3))?.allowed).toEqual(['100.64.0.3/32', '10.2.0.0/16']);
    expect(machine.iface?.peers.get(PK(2))?.allowed).toEqual(['100.64.0.2/32']);
    machine.clearCalls();
    expect((await dp.apply(desired([peer(2), peer(3, { advertise_cidrs: ['10.2.0.0/16'] })]))).changed).toBe(false);
  });

  it('leaves a roamed endpoint alone, but sets a changed desired endpoint', async () => {
    const { machine, dp } = await converged([peer(2)]);
    const p2 = machine.iface?.peers.get(PK(2));
    if (p2) p2.endpoint = '203.0.113.7:61000';
    await dp.apply(desired([peer(2)]));
    expect(machine.mutations()).toEqual([]);
    await dp.apply(desired([peer(2, { endpoints: [{ source: 'manual', address: '198.51.100.2:51820' }] })]));
    expect(machine.mutations()).toEqual([`wg set ${IF} peer ${PK(2)} endpoint 198.51.100.2:51820`]);
  });

  it('repairs drift made by hand: removed table, removed peer, link down, foreign address', async () => {
    const { machine, dp } = await converged([peer(2), peer(3)]);
    machine.nftTable = null;
    machine.iface?.peers.delete(PK(3));
    if (machine.iface) {
      machine.iface.up = false;
      machine.iface.addresses.push('10.77.0.1/24');
    }
    await dp.apply(desired([peer(2), peer(3)]));
    expect(machine.mutations()).toEqual([
      'nft -f <file>',
      `ip addr del 10.77.0.1/24 dev ${IF}`,
      `ip link set dev ${IF} mtu 1420 up`,
      `wg set ${IF} peer ${PK(3)} endpoint 192.168.9.3:51820 persistent-keepalive 25 allowed-ips 100.64.0.3/32`,
    ]);
  });

  it('a subnet router turns on forwarding of the families of its routes only, once; the relay device both', async () => {
    const { machine, dp } = setup();
    await dp.apply(desired([device(1, { advertise_cidrs: ['10.20.0.0/16'] }), peer(2)]));
    expect(machine.mutations().filter((l) => l.startsWith('sysctl'))).toEqual(['sysctl -w net.ipv4.ip_forward=1']);
    expect(machine.sysctls).toEqual(new Map([['net.ipv4.ip_forward', '1'], ['net.ipv6.conf.all.forwarding', '0']]));
    machine.clearCalls();
    await dp.apply(desired([device(1, { advertise_cidrs: ['10.20.0.0/16'] }), peer(2)]));
    expect(machine.mutations()).toEqual([]);
    // Its own route is not routed into the tunnel; nothing is forwarded once it is withdrawn (and forwarding stays on).
    expect(machine.routes.size).toBe(0);
    machine.clearCalls();
    await dp.apply(desired([device(1, { advertise_cidrs: [] }), peer(2)]));
    expect(machine.lines().filter((l) => l.startsWith('sysctl'))).toEqual([]);
    expect(machine.sysctls.get('net.ipv4.ip_forward')).toBe('1');

    const relay = setup();
    await relay.dp.apply(desired([device(1, { relay: true, endpoints: [{ source: 'manual', address: '198.51.100.1:51820' }] }), peer(2)]));
    expect(relay.machine.mutations().filter((l) => l.startsWith('sysctl'))).toEqual(['sysctl -w net.ipv4.ip_forward=1', 'sysctl -w net.ipv6.conf.all.forwarding=1']);
  });

  it('replaces changed routes and removes only its own stale ones', async () => {
    const { machine, dp } = setup();
    await dp.apply(desired([], { routes: [{ destination: '10.1.0.0/16' }, { destination: 'fd00:1::/64' }] }));
    machine.clearCalls();
    await dp.apply(desired([], { routes: [{ destination: '10.1.0.0/16', via: '100.64.0.9' }, { destination: '10.3.0.0/16' }] }));
    expect(machine.mutations()).toEqual([
      `ip route replace 10.1.0.0/16 via 100.64.0.9 dev ${IF} proto 70`,
      `ip route replace 10.3.0.0/16 dev ${IF} proto 70`,
      `ip route del fd00:1::/64 dev ${IF} proto 70`,
    ]);
    expect([...machine.routes.entries()]).toEqual([
      ['10.1.0.0/16', '100.64.0.9'],
      ['10.3.0.0/16', null],
    ]);
  });

  it('sets a new MTU and reloads the firewall only when the ruleset changes', async () => {
    const { machine, dp } = await converged([peer(2)]);
    await dp.apply(desired([peer(2)], { mtu: 1280 }));
    expect(machine.mutations()).toEqual([`ip link set dev ${IF} mtu 1280 up`]);
    machine.clearCalls();
    const group = securityGroup(1, [rule('icmp', 0, 0, [])]);
    await dp.apply(desired([device(1, { security_group_id: group.id }), peer(2)], { groups: [group], mtu: 1280 }));
    expect(machine.mutations()).toEqual(['nft -f <file>']);
    expect(machine.nftTable).toContain('meta l4proto icmp accept');
  });
});

describe('LinuxDataplane failures', () => {
  it('a failed nft load changes nothing and keeps the previous state; a retry applies', async () => {
    const { machine, dp } = setup();
    await dp.apply(desired([peer(2)]));
    const before = { table: machine.nftTable, peers: [...(machine.iface?.peers.keys() ?? [])] };
    const describedBefore = await dp.describe();
    machine.clearCalls();
    machine.fail = (command, args) => command === 'nft' && args[0] === '-f';
    const group = securityGroup(1, [rule('tcp', 22, 22, [])]);
    const next = desired([device(1, { security_group_id: group.id }), peer(2), peer(3)], { groups: [group] });

    const error = await dp.apply(next).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DataplaneError);
    expect(error).toMatchObject({ step: 'firewall' });
    expect((error as DataplaneError).cause).toBeInstanceOf(CommandError);
    expect(machine.mutations()).toEqual(['nft -f <file>']);
    expect(machine.nftTable).toBe(before.table);
    expect([...(machine.iface?.peers.keys() ?? [])]).toEqual(before.peers);
    expect(await dp.describe()).toEqual(describedBefore);

    machine.fail = null;
    const retried = await dp.apply(next);
    expect(retried.actions).toEqual(['firewall loaded', `peer added ${PK(3)}`]);
    expect(machine.nftTable).toContain('tcp dport 22 accept');
  });

  it('a failed peer update is a typed error at step peers, and the next apply repairs it', async () => {
    const { machine, dp } = setup();
    await dp.apply(desired([peer(2)]));
    machine.fail = (command, args) => command === 'wg' && args[0] === 'set';
    await expect(dp.apply(desired([peer(2), peer(3)]))).rejects.toMatchObject({ name: 'DataplaneError', step: 'peers' });
    expect(machine.iface?.peers.has(PK(2))).toBe(true);
    machine.fail = null;
    await dp.apply(desired([peer(2), peer(3)]));
    expect(machine.iface?.peers.has(PK(3))).toBe(true);
  });

  it('fails when neither kernel WireGuard nor wireguard-go can create the interface', async () => {
    const { machine, dp } = setup();
    machine.fail = (command) => command === 'wireguard-go';
    await expect(dp.apply(desired([peer(2)]))).rejects.toMatchObject({ name: 'DataplaneError', step: 'interface' });
    expect(machine.iface).toBeNull();
  });

  it('stops when aborted', async () => {
    const { dp } = setup();
    const controller = new AbortController();
    controller.abort();
    await expect(dp.apply(desired([peer(2)]), controller.signal)).rejects.toBeInstanceOf(DataplaneAbortedError);
  });

  it('rejects a desired state for another interface before touching anything', async () => {
    const machine = new FakeMachine('fp9');
    const dp = new LinuxDataplane({ interfaceName: 'fp9', runner: machine });
    await expect(dp.apply(desired([peer(2)]))).rejects.toMatchObject({ step: 'validate' });
    expect(machine.calls).toEqual([]);
  });
});

describe('LinuxDataplane cleanup and describe', () => {
  it('removes the interface (and its routes) and the table; again is harmless', async () => {
    const { machine, dp } = setup();
    await dp.apply(desired([peer(2)], { routes: [{ destination: '10.1.0.0/16' }] }));
    await dp.cleanup();
    expect(machine.iface).toBeNull();
    expect(machine.routes.size).toBe(0);
    expect(machine.nftTable).toBeNull();
    await dp.cleanup();
    expect((await dp.describe()).applied).toBe(false);
  });

  it('describes live peers with their device ids and no private key', async () => {
    const { machine, dp } = setup();
    await dp.apply(desired([peer(2)]));
    const p2 = machine.iface?.peers.get(PK(2));
    if (p2) p2.handshake = 1_700_000_000;
    const d = await dp.describe();
    expect(d.peers).toEqual([
      {
        public_key: PK(2),
        device_id: deviceId(2),
        endpoint: '192.168.9.2:51820',
        allowed_ips: ['100.64.0.2/32'],
        latest_handshake: new Date(1_700_000_000_000).toISOString(),
        rx_bytes: 0,
        tx_bytes: 0,
      },
    ]);
    expect(JSON.stringify(d)).not.toContain(keyPair(1).privateKey);
  });
});
