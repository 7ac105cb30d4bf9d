/** Desired states shared by the renderer golden tests and the namespace test's syntax check. */
import type { DesiredDataplane } from '../../../src/agent/dataplane/index.js';
import { desiredStateOf, device, groupId, organization, rule, securityGroup } from './fixtures.js';

export function fullScenario(): DesiredDataplane {
  const group = securityGroup(
    1,
    [
      rule('tcp', 22, 22, ['100.64.0.2', '10.0.0.0/8', 'fd00::/64']),
      rule('udp', 5000, 5100, ['192.168.1.10-192.168.1.20', 'fd00::1-fd00::9']),
      rule('icmp', 0, 0, []),
      rule('icmpv6', 0, 0, ['fd00::/8']),
    ],
    [rule('tcp', 443, 443, ['0.0.0.0/0']), rule('any', 0, 0, ['100.64.0.0/16', '2001:db8::/32']), rule('udp', 53, 53, ['100.64.0.1'])],
  );
  return desiredStateOf(1, {
    organization: organization({
      mtu: 1380,
      resolvers: ['100.64.0.53', 'fd00::53'],
      routes: [{ destination: '10.20.0.0/16', via: '100.64.0.2' }, { destination: '172.16.0.0/12' }, { destination: 'fd00:20::/48' }],
    }),
    devices: [
      device(1, { security_group_id: group.id }),
      device(2, {
        hostname: 'router\n[Peer] evil',
        advertise_cidrs: ['10.20.0.0/16', 'fd00:20::/48'],
        endpoints: [
          { source: 'local', address: '192.168.1.2:51820' },
          { source: 'stun', address: '198.51.100.2:40001' },
        ],
      }),
      device(3, { endpoints: [{ source: 'manual', address: '[2001:db8::3]:51820' }] }),
      device(4),
    ],
    securityGroups: [group],
  });
}

export function allowAllScenario(): DesiredDataplane {
  return desiredStateOf(2, {
    listenPort: 51821,
    devices: [device(1), device(2)],
    securityGroups: [],
  });
}

export function missingGroupScenario(): DesiredDataplane {
  return desiredStateOf(1, {
    devices: [device(1, { security_group_id: groupId(7) })],
    securityGroups: [],
  });
}

/**
 * Rules that name devices: device 1 (group `web`) admits postgres from the
 * devices tagged `tag:app` (2, and 3 with its approved route) and ssh from
 * the devices of group `ops` (4), and may reach the devices of `group:db`
 * (none yet) and an unknown group.
 */
export function referencesScenario(): DesiredDataplane {
  const web = {
    ...securityGroup(
      1,
      [
        { ...rule('tcp', 5432, 5432, []), devices: ['tag:app'] },
        { ...rule('tcp', 22, 22, ['10.9.0.0/16']), devices: ['group:ops', 'tag:app'] },
        { ...rule('icmp', 0, 0, []), devices: [`group:${groupId(2)}`] },
      ],
      [{ ...rule('any', 0, 0, []), devices: ['group:db', 'group:gone'] }],
    ),
    name: 'web',
  };
  const ops = { ...securityGroup(2, []), name: 'ops' };
  const db = { ...securityGroup(3, []), name: 'db' };
  return desiredStateOf(1, {
    devices: [
      device(1, { security_group_id: web.id }),
      device(2, { tags: ['tag:app'] }),
      device(3, { tags: ['tag:app', 'tag:edge'], advertise_cidrs: ['10.30.0.0/24', 'fd00:30::/64'], approved_cidrs: ['10.30.0.0/24', 'fd00:30::/64'] }),
      device(4, { security_group_id: ops.id }),
      device(5, { tags: ['tag:other'], advertise_cidrs: ['10.40.0.0/24'], approved_cidrs: [] }),
    ],
    securityGroups: [web, ops, db],
  });
}
