import { describe, expect, it } from 'vitest';
import {
  computeDesiredState,
  DesiredStateError,
  type DesiredStateInput,
} from '../../../src/agent/dataplane/index.js';
import type { DeviceObject, SecurityGroup } from '../../../src/protocol/index.js';
import { device, deviceId, groupId, keyPair, organization, rule, securityGroup } from './fixtures.js';

function input(devices: DeviceObject[], groups: SecurityGroup[] = [], self = 1): DesiredStateInput {
  return {
    deviceId: deviceId(self),
    interfaceName: 'fp0',
    privateKey: keyPair(self).privateKey,
    listenPort: 51820,
    organization: organization({ ipv4_cidr: '100.64.0.0/20', mtu: 1380, resolvers: ['1.1.1.1', 'FD00::53'] }),
    devices,
    securityGroups: groups,
  };
}

describe('computeDesiredState: interface and peers', () => {
  it('puts the tunnel IP with the pool prefix, mtu, port and resolvers on the interface', () => {
    const d = computeDesiredState(input([device(1), device(2)]));
    expect(d.interface).toEqual({
      name: 'fp0',
      private_key: keyPair(1).privateKey,
      address: '100.64.0.1/20',
      mtu: 1380,
      listen_port: 51820,
      resolvers: ['1.1.1.1', 'fd00::53'],
    });
  });

  it('has one peer per other device, none for itself, sorted by device id', () => {
    const d = computeDesiredState(input([device(3), device(1), device(2)]));
    expect(d.peers.map((p) => p.device_id)).toEqual([deviceId(2), deviceId(3)]);
    expect(d.peers.map((p) => p.public_key)).toEqual([keyPair(2).publicKey, keyPair(3).publicKey]);
    expect(d.peers.some((p) => p.public_key === keyPair(1).publicKey)).toBe(false);
  });

  it('allows the tunnel IP /32 first, then advertised CIDRs canonical and sorted', () => {
    const d = computeDesiredState(
      input([device(1), device(2, { advertise_cidrs: ['fd00:1::5/64', '192.168.7.9/24', '10.0.0.0/8', '100.64.0.2/32'] })]),
    );
    expect(d.peers[0]?.allowed_ips).toEqual(['100.64.0.2/32', '10.0.0.0/8', '192.168.7.0/24', 'fd00:1::/64']);
  });

  it('routes only CIDRs a device requests and an admin approved (issue 12)', () => {
    const takeover = ['0.0.0.0/0', '10.20.0.0/17', '10.20.128.0/17', '::/0'];
    const d = computeDesiredState(
      input([
        device(1),
        device(2, { advertise_cidrs: ['10.20.0.0/16'], approved_cidrs: ['10.20.0.0/16'] }),
        device(3, { advertise_cidrs: [...takeover, '10.30.0.0/24'], approved_cidrs: ['10.30.0.0/24'] }),
        // Approved but no longer requested: the device withdrew it.
        device(4, { advertise_cidrs: [], approved_cidrs: ['10.40.0.0/24'] }),
      ]),
    );
    expect(d.peers.map((p) => p.allowed_ips)).toEqual([
      ['100.64.0.2/32', '10.20.0.0/16'],
      ['100.64.0.3/32', '10.30.0.0/24'],
      ['100.64.0.4/32'],
    ]);
    expect(d.skipped.filter((s) => s.reason === 'not approved').map((s) => s.subject)).toEqual(
      ['0.0.0.0/0', '10.20.0.0/17', '10.20.128.0/17', '::/0'].map((c) => `${deviceId(3)} ${c}`),
    );
  });

  it('treats a device object without approved_cidrs (written by an older server) as approving nothing', () => {
    const old = { ...device(2, { advertise_cidrs: ['10.2.0.0/16'] }) } as Partial<DeviceObject>;
    delete old.approved_cidrs;
    const d = computeDesiredState(input([device(1), old as DeviceObject]));
    expect(d.peers[0]?.allowed_ips).toEqual(['100.64.0.2/32']);
  });

  it('gives a CIDR advertised twice to the lower device id, and never a tunnel IP to another device', () => {
    const d = computeDesiredState(
      input([
        device(1),
        device(3, { advertise_cidrs: ['10.9.0.0/16', '100.64.0.2/32'] }),
        device(2, { advertise_cidrs: ['10.9.0.0/16', '100.64.0.1/32', 'bogus'] }),
      ]),
    );
    expect(d.peers.map((p) => p.allowed_ips)).toEqual([['100.64.0.2/32', '10.9.0.0/16'], ['100.64.0.3/32']]);
    expect(d.skipped.map((s) => [s.kind, s.subject])).toEqual([
      ['allowed-ip', `${deviceId(2)} 100.64.0.1/32`],
      ['allowed-ip', `${deviceId(2)} bogus`],
      ['allowed-ip', `${deviceId(3)} 10.9.0.0/16`],
      ['allowed-ip', `${deviceId(3)} 100.64.0.2/32`],
    ]);
  });

  it('tries stun, then manual, then local only without stun; the first is the endpoint; none gives no endpoint and no keepalive', () => {
    const all = [
      { source: 'local' as const, address: '192.168.1.2:51820' },
      { source: 'stun' as const, address: '198.51.100.2:40000' },
      { source: 'manual' as const, address: '[2001:DB8::2]:51820' },
    ];
    const d = computeDesiredState(
      input([
        device(1),
        device(2, { endpoints: all }),
        device(3, { endpoints: all.slice(0, 2) }),
        device(4, { endpoints: all.slice(0, 1) }),
        device(5, { endpoints: [] }),
        device(6, { endpoints: [{ source: 'manual', address: 'nope' }, ...all.slice(0, 1)] }),
      ]),
    );
    expect(d.peers.map((p) => [p.endpoint, p.persistent_keepalive])).toEqual([
      ['198.51.100.2:40000', 25],
      ['198.51.100.2:40000', 25],
      ['192.168.1.2:51820', 25],
      [null, 0],
      ['192.168.1.2:51820', 25],
    ]);
    expect(d.peers.map((p) => p.candidates)).toEqual([
      ['198.51.100.2:40000', '[2001:db8::2]:51820'],
      ['198.51.100.2:40000'],
      ['192.168.1.2:51820'],
      [],
      ['192.168.1.2:51820'],
    ]);
    expect(d.skipped).toEqual([{ kind: 'endpoint', subject: `${deviceId(6)} nope`, reason: 'not ip:port' }]);
  });

  it('never tries a stun endpoint when either side is symmetric, nor a local one across NATs, and tries local first behind the same public address', () => {
    const eps = (n: number, pub: string) => [
      { source: 'local' as const, address: `192.168.1.${n}:51820` },
      { source: 'stun' as const, address: `${pub}:4000${n}` },
    ];
    const d = computeDesiredState(
      input([
        device(1, { endpoints: eps(1, '198.51.100.1') }),
        device(2, { endpoints: eps(2, '198.51.100.1') }),
        device(3, { endpoints: eps(3, '198.51.100.9') }),
        device(4, { endpoints: eps(4, '198.51.100.9'), symmetric_nat: true }),
        device(5, { endpoints: eps(5, '198.51.100.1'), symmetric_nat: true }),
      ]),
    );
    expect(d.peers.map((p) => p.candidates)).toEqual([
      ['192.168.1.2:51820', '198.51.100.1:40002'],
      ['198.51.100.9:40003'],
      [],
      ['192.168.1.5:51820'],
    ]);
    expect(d.peers.map((p) => p.endpoint)).toEqual(['192.168.1.2:51820', '198.51.100.9:40003', null, '192.168.1.5:51820']);
    const self = device(1, { endpoints: eps(1, '198.51.100.1'), symmetric_nat: true });
    const fromSymmetric = computeDesiredState(input([self, device(3, { endpoints: eps(3, '198.51.100.9') })]));
    expect(fromSymmetric.peers.map((p) => p.candidates)).toEqual([[]]);
  });

  it('path-managed: peers carry their candidates but no endpoint, and always the keepalive', () => {
    const d = computeDesiredState({
      ...input([device(1), device(2, { endpoints: [{ source: 'stun', address: '198.51.100.2:40000' }] }), device(3, { endpoints: [] })]),
      pathManaged: true,
    });
    expect(d.peers.map((p) => [p.endpoint, p.candidates, p.persistent_keepalive])).toEqual([
      [null, ['198.51.100.2:40000'], 25],
      [null, [], 25],
    ]);
  });

  it('leaves out peers with a bad or duplicate public key', () => {
    const d = computeDesiredState(
      input([device(1), device(2, { public_key: 'bad' }), device(3), device(4, { public_key: keyPair(3).publicKey })]),
    );
    expect(d.peers.map((p) => p.device_id)).toEqual([deviceId(3)]);
    expect(d.skipped.map((s) => s.subject)).toEqual([deviceId(2), deviceId(4)]);
  });

  it('does not depend on the order of its inputs', () => {
    const devices = [device(1), device(2, { advertise_cidrs: ['10.2.0.0/16', '10.1.0.0/16'] }), device(3), device(4)];
    const groups = [securityGroup(1, [rule('tcp', 22, 22, ['10.0.0.0/8', '10.0.0.1'])]), securityGroup(2, [])];
    devices[0] = device(1, { security_group_id: groupId(1) });
    const a = computeDesiredState(input(devices, groups));
    const b = computeDesiredState(input([...devices].reverse(), [...groups].reverse()));
    expect(b).toEqual(a);
  });

  it('fails for a missing own device, a bad interface name or listen port', () => {
    expect(() => computeDesiredState(input([device(2)]))).toThrow(DesiredStateError);
    expect(() => computeDesiredState({ ...input([device(1)]), interfaceName: 'x'.repeat(16) })).toThrow(DesiredStateError);
    expect(() => computeDesiredState({ ...input([device(1)]), interfaceName: 'a b' })).toThrow(DesiredStateError);
    expect(() => computeDesiredState({ ...input([device(1)]), listenPort: 0 })).toThrow(DesiredStateError);
  });
});

describe('computeDesiredState: routes', () => {
  it('routes the organization routes via the tunnel, canonical and sorted, skipping bad ones', () => {
    const base = input([device(1)]);
    const d = computeDesiredState({
      ...base,
      organization: organization({
        ipv4_cidr: '100.64.0.0/20',
        routes: [
          { destination: 'fd00:9::1/64' },
          { destination: '10.2.3.4/16', via: '100.64.0.7' },
          { destination: '10.1.0.0/16' },
          { destination: '10.1.0.0/16', via: '100.64.0.8' },
          { destination: '100.64.0.0/20' },
          { destination: '10.3.0.0/16', via: 'fd00::1' },
        ],
      }),
    });
    expect(d.routes).toEqual([
      { destination: '10.1.0.0/16', via: null },
      { destination: '10.2.0.0/16', via: '100.64.0.7' },
      { destination: 'fd00:9::/64', via: null },
    ]);
    expect(d.skipped.map((s) => s.reason)).toEqual([
      'duplicate destination',
      'via is of another address family',
      'is the tunnel pool itself',
    ]);
  });
});

describe('computeDesiredState: routes peers serve, and the routes this device serves', () => {
  const router = (overrides: Partial<DeviceObject>) => device(2, { hostname: 'router', ...overrides });

  it('routes an approved and requested prefix into the tunnel, to the peer that serves it', () => {
    const d = computeDesiredState(input([device(1), router({ advertise_cidrs: ['10.20.0.0/16'], approved_cidrs: ['10.20.0.0/16'] })]));
    expect(d.peers[0]?.allowed_ips).toEqual(['100.64.0.2/32', '10.20.0.0/16']);
    expect(d.routes).toEqual([{ destination: '10.20.0.0/16', via: null }]);
    expect(d.subnet_routes).toEqual([]);
  });

  it('routes nothing for a requested prefix no admin approved: no allowed IP, no kernel route', () => {
    const d = computeDesiredState(input([device(1), router({ advertise_cidrs: ['10.20.0.0/16'], approved_cidrs: [] })]));
    expect(d.peers[0]?.allowed_ips).toEqual(['100.64.0.2/32']);
    expect(d.routes).toEqual([]);
    expect(d.skipped).toEqual([{ kind: 'allowed-ip', subject: `${deviceId(2)} 10.20.0.0/16`, reason: 'not approved' }]);
  });

  it('routes nothing for an approved prefix the device does not request', () => {
    const d = computeDesiredState(input([device(1), router({ advertise_cidrs: [], approved_cidrs: ['10.20.0.0/16'] })]));
    expect(d.peers[0]?.allowed_ips).toEqual(['100.64.0.2/32']);
    expect(d.routes).toEqual([]);
  });

  it("keeps one route per destination, the network route's (its via wins), and merges the others sorted", () => {
    const base = input([
      device(1),
      router({ advertise_cidrs: ['10.20.0.0/16', 'fd00:20::/48'] }),
      device(3, { advertise_cidrs: ['192.168.5.0/24'] }),
    ]);
    const d = computeDesiredState({
      ...base,
      organization: organization({ ipv4_cidr: '100.64.0.0/20', routes: [{ destination: '10.20.0.0/16', via: '100.64.0.2' }, { destination: '172.16.0.0/12' }] }),
    });
    expect(d.routes).toEqual([
      { destination: '10.20.0.0/16', via: '100.64.0.2' },
      { destination: '172.16.0.0/12', via: null },
      { destination: '192.168.5.0/24', via: null },
      { destination: 'fd00:20::/48', via: null },
    ]);
    expect(d.skipped).toEqual([]);
  });

  it('routes the prefixes of a device reached through the relay device too (they are in its peer)', () => {
    const open = [{ source: 'manual' as const, address: '198.51.100.9:51820' }];
    const d = computeDesiredState(
      input([
        device(1, { symmetric_nat: true, endpoints: [{ source: 'stun', address: '203.0.113.1:1000' }] }),
        device(2, { symmetric_nat: true, endpoints: [{ source: 'stun', address: '203.0.113.2:1000' }], advertise_cidrs: ['10.20.0.0/16'] }),
        device(9, { relay: true, endpoints: open }),
      ]),
    );
    expect(d.relayed.map((r) => r.device_id)).toEqual([deviceId(2)]);
    expect(d.peers.map((p) => p.allowed_ips)).toEqual([['100.64.0.9/32', '10.20.0.0/16', '100.64.0.2/32']]);
    expect(d.routes).toEqual([{ destination: '10.20.0.0/16', via: null }]);
  });

  it("never routes this device's own requested prefixes into its own tunnel, not even as a network route", () => {
    const base = input([
      device(1, { advertise_cidrs: ['10.20.0.0/16', '10.30.0.0/24'], approved_cidrs: ['10.20.0.0/16'] }),
      device(2, { advertise_cidrs: ['10.30.0.0/24'] }),
    ]);
    const d = computeDesiredState({
      ...base,
      organization: organization({ ipv4_cidr: '100.64.0.0/20', routes: [{ destination: '10.20.5.0/24' }, { destination: '10.0.0.0/8' }] }),
    });
    // The approved one is served here; the unapproved one is still this device's own network.
    expect(d.subnet_routes).toEqual(['10.20.0.0/16']);
    expect(d.routes).toEqual([{ destination: '10.0.0.0/8', via: null }]);
    expect(d.peers[0]?.allowed_ips).toEqual(['100.64.0.2/32', '10.30.0.0/24']);
    expect(d.skipped).toEqual([
      { kind: 'route', subject: `${deviceId(1)} 10.30.0.0/24`, reason: 'not approved' },
      { kind: 'route', subject: '10.20.5.0/24', reason: 'inside 10.20.0.0/16, a route this device requests itself' },
      { kind: 'route', subject: '10.30.0.0/24', reason: 'inside 10.30.0.0/24, a route this device requests itself' },
    ]);
  });

  it('serves no default route and nothing overlapping the tunnel pool, and routes no served default route', () => {
    const d = computeDesiredState(
      input([
        device(1, { advertise_cidrs: ['0.0.0.0/0', '100.64.8.0/24', '192.168.5.0/24'] }),
        device(2, { advertise_cidrs: ['::/0'] }),
      ]),
    );
    expect(d.subnet_routes).toEqual(['192.168.5.0/24']);
    expect(d.routes).toEqual([]);
    expect(d.skipped.map((s) => [s.subject, s.reason])).toEqual([
      ['0.0.0.0/0', 'is a default route: exit nodes are not supported'],
      ['100.64.8.0/24', 'overlaps the tunnel pool 100.64.0.0/20'],
      ['::/0', 'is a default route: exit nodes are not supported'],
    ]);
  });

  it('gives a prefix this device and a peer both claim to the lower device id, on both sides', () => {
    const devices = [device(1, { advertise_cidrs: ['10.20.0.0/16'] }), device(2, { advertise_cidrs: ['10.20.0.0/16'] })];
    const one = computeDesiredState(input(devices, [], 1));
    const two = computeDesiredState(input(devices, [], 2));
    expect([one.subnet_routes, one.peers[0]?.allowed_ips]).toEqual([['10.20.0.0/16'], ['100.64.0.2/32']]);
    expect([two.subnet_routes, two.peers[0]?.allowed_ips, two.routes]).toEqual([[], ['100.64.0.1/32', '10.20.0.0/16'], []]);
  });
});

describe('computeDesiredState: firewall', () => {
  it('allows all on the tunnel without a security group', () => {
    expect(computeDesiredState(input([device(1), device(2)])).firewall).toEqual({ mode: 'allow-all' });
  });

  it('compiles inbound and outbound rules per family', () => {
    const group = securityGroup(
      1,
      [
        rule('tcp', 22, 22, ['100.64.0.2', '10.0.0.0/25', '10.0.0.128/25', 'fd00::/64']),
        rule('udp', 1000, 2000, ['192.168.1.10-192.168.1.20', 'fd00::1-fd00::9']),
        rule('icmp', 0, 0, ['100.64.0.0/16', 'fd00::/8']),
        rule('icmpv6', 0, 0, ['100.64.0.0/16', 'fd00::/8']),
        rule('tcp', 0, 0, ['100.64.0.3']),
        rule('icmpv6', 0, 0, ['10.0.0.0/8']),
      ],
      [rule('any', 0, 0, [])],
    );
    const d = computeDesiredState(input([device(1, { security_group_id: group.id }), device(2)], [group]));
    expect(d.firewall).toEqual({
      mode: 'filter',
      security_group_id: group.id,
      group_found: true,
      sets: [],
      inbound: [
        { protocol: 'icmp', ports: null, ipv4: ['100.64.0.0/16'], ipv6: [], sets: [] },
        { protocol: 'icmpv6', ports: null, ipv4: [], ipv6: ['fd00::/8'], sets: [] },
        { protocol: 'tcp', ports: null, ipv4: ['100.64.0.3'], ipv6: [], sets: [] },
        { protocol: 'tcp', ports: { from: 22, to: 22 }, ipv4: ['10.0.0.0/24', '100.64.0.2'], ipv6: ['fd00::/64'], sets: [] },
        { protocol: 'udp', ports: { from: 1000, to: 2000 }, ipv4: ['192.168.1.10-192.168.1.20'], ipv6: ['fd00::1-fd00::9'], sets: [] },
      ],
      outbound: [{ protocol: 'any', ports: null, ipv4: ['0.0.0.0/0'], ipv6: ['::/0'], sets: [] }],
    });
  });

  it('drops a rule whose ranges are all invalid instead of widening it to any address', () => {
    const group = securityGroup(1, [rule('tcp', 22, 22, ['not-an-ip'])]);
    const d = computeDesiredState(input([device(1, { security_group_id: group.id })], [group]));
    expect(d.firewall).toMatchObject({ mode: 'filter', inbound: [] });
    expect(d.skipped).toEqual([{ kind: 'ip-range', subject: 'inbound not-an-ip', reason: 'not a CIDR, IP or IP-IP range' }]);
  });

  it('fails closed when the named group is not in the snapshot', () => {
    const d = computeDesiredState(input([device(1, { security_group_id: groupId(9) })], [securityGroup(1, [])]));
    expect(d.firewall).toEqual({ mode: 'filter', security_group_id: groupId(9), group_found: false, sets: [], inbound: [], outbound: [] });
  });

  it("uses only the device's own group", () => {
    const mine = securityGroup(1, [rule('tcp', 80, 80, [])]);
    const other = securityGroup(2, [rule('tcp', 22, 22, [])]);
    const d = computeDesiredState(
      input([device(1, { security_group_id: mine.id }), device(2, { security_group_id: other.id })], [mine, other]),
    );
    expect(d.firewall.mode === 'filter' && d.firewall.inbound.map((r) => r.ports)).toEqual([{ from: 80, to: 80 }]);
  });
});
