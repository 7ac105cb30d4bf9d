import { describe, expect, it } from 'vitest';
import { computeDesiredState, renderNftables, type DesiredStateInput } from '../../../src/agent/dataplane/index.js';
import type { DeviceObject } from '../../../src/protocol/index.js';
import { device, deviceId, keyPair, organization } from './fixtures.js';

function input(devices: DeviceObject[], self: number): DesiredStateInput {
  return {
    deviceId: deviceId(self),
    interfaceName: 'fp0',
    privateKey: keyPair(self).privateKey,
    listenPort: 51820,
    organization: organization({ ipv4_cidr: '100.64.0.0/20' }),
    devices,
    securityGroups: [],
    pathManaged: true,
  };
}

/** Behind a NAT: a local address and another public mapping. */
const natted = (n: number, symmetric: boolean) => ({
  endpoints: [{ source: 'local' as const, address: `192.168.${n}.2:51820` }, { source: 'stun' as const, address: `198.51.100.${n}:4000${n}` }],
  symmetric_nat: symmetric,
});
/** Not behind a NAT: its STUN mapping is its own address. */
const open = (n: number) => ({
  endpoints: [{ source: 'local' as const, address: `203.0.113.${n}:51820` }, { source: 'stun' as const, address: `203.0.113.${n}:51820` }],
  symmetric_nat: false,
});

describe('relay devices: pairs a symmetric NAT keeps apart go through the organization\'s relay device', () => {
  // 1 symmetric, 2 endpoint-independent, 3 symmetric, 4 the relay device (open), 5 an open device.
  const devices = [
    device(1, natted(1, true)),
    device(2, natted(2, false)),
    device(3, natted(3, true)),
    device(4, { ...open(4), relay: true }),
    device(5, open(5)),
  ];

  it('a symmetric device reaches the NATed devices through the relay device, whose peer carries their addresses; open devices directly', () => {
    const d = computeDesiredState(input(devices, 1));
    expect(d.peers.map((p) => p.device_id)).toEqual([deviceId(4), deviceId(5)]);
    expect(d.peers[0]?.allowed_ips).toEqual(['100.64.0.4/32', '100.64.0.2/32', '100.64.0.3/32']);
    expect(d.peers[0]?.candidates).toEqual(['203.0.113.4:51820']);
    expect(d.peers[1]?.candidates).toEqual(['203.0.113.5:51820']);
    expect(d.relayed.map((r) => [r.device_id, r.via_device_id])).toEqual([[deviceId(2), deviceId(4)], [deviceId(3), deviceId(4)]]);
    expect(d.forwarding).toBe(false);
  });

  it('the other end decides the same: the endpoint-independent device reaches the symmetric one through the relay device', () => {
    const d = computeDesiredState(input(devices, 2));
    expect(d.peers.map((p) => p.device_id)).toEqual([deviceId(4), deviceId(5)]);
    expect(d.relayed.map((r) => r.device_id)).toEqual([deviceId(1), deviceId(3)]);
    expect(d.peers[0]?.allowed_ips).toEqual(['100.64.0.4/32', '100.64.0.1/32', '100.64.0.3/32']);
  });

  it('the relay device keeps every peer and forwards, only between its peers', () => {
    const d = computeDesiredState(input(devices, 4));
    expect(d.peers).toHaveLength(4);
    expect(d.relayed).toEqual([]);
    expect(d.forwarding).toBe(true);
    expect(renderNftables(d)).toContain('iifname "fp0" oifname "fp0" accept\n\t\tiifname "fp0" drop');
    expect(renderNftables(computeDesiredState(input(devices, 1)))).not.toContain('chain forward');
  });

  it('without a relay device (none marked, or the marked one behind a NAT) every device stays a peer', () => {
    for (const relay of [undefined, device(4, { ...natted(4, false), relay: true })]) {
      const all = relay ? [...devices.slice(0, 3), relay] : devices.slice(0, 3);
      const d = computeDesiredState(input(all, 1));
      expect(d.relayed).toEqual([]);
      expect(d.peers.map((p) => p.device_id)).toEqual(all.filter((x) => x.id !== deviceId(1)).map((x) => x.id));
    }
  });
});
