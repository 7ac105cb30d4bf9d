import { describe, expect, it } from 'vitest';
import {
  canonicalCidr,
  canonicalEndpoint,
  compareCidrs,
  formatInterval,
  formatIp,
  mergeIntervals,
  parseIp,
  rangeToInterval,
} from '../../../src/agent/dataplane/addresses.js';
import { cidrNetwork, hasHostBits } from '../../../src/protocol/index.js';

const fmt = (text: string): string | undefined => {
  const ip = parseIp(text);
  return ip && formatIp(ip);
};

describe('dataplane addresses', () => {
  it('formats IPv6 the way inet_ntop (wg, ip) does', () => {
    expect(fmt('FD00:0:0:0:0:0:0:1')).toBe('fd00::1');
    expect(fmt('2001:db8:0:0:1:0:0:1')).toBe('2001:db8::1:0:0:1');
    expect(fmt('2001:db8:0:1:1:1:1:1')).toBe('2001:db8:0:1:1:1:1:1');
    expect(fmt('::')).toBe('::');
    expect(fmt('::1')).toBe('::1');
    expect(fmt('::ffff:10.0.0.1')).toBe('::ffff:10.0.0.1');
    expect(fmt('1:0:0:2:0:0:0:3')).toBe('1:0:0:2::3');
    expect(fmt('010.0.0.1')).toBeUndefined();
  });

  it('writes the network a CIDR names, and tells a CIDR with host bits set (protocol cidrNetwork, hasHostBits)', () => {
    const cases: [string, string | undefined, boolean][] = [
      ['10.20.0.1/16', '10.20.0.0/16', true],
      ['10.20.0.0/16', '10.20.0.0/16', false],
      ['10.20.0.0/15', '10.20.0.0/15', false],
      ['10.21.0.0/15', '10.20.0.0/15', true],
      ['255.255.255.255/1', '128.0.0.0/1', true],
      ['1.2.3.4/0', '0.0.0.0/0', true],
      ['1.2.3.4/32', '1.2.3.4/32', false],
      ['FD00:20::1/48', 'fd00:20::/48', true],
      ['FD00:20::/48', 'fd00:20::/48', false],
      ['2001:db8::8000/113', '2001:db8::8000/113', false],
      ['2001:db8::c000/113', '2001:db8::8000/113', true],
      ['::ffff:10.0.0.1/120', '::ffff:10.0.0.0/120', true],
      ['10.0.0.0/33', undefined, false],
      ['lan', undefined, false],
    ];
    for (const [text, network, hostBits] of cases) expect([text, cidrNetwork(text), hasHostBits(text)]).toEqual([text, network, hostBits]);
  });

  it('canonicalizes CIDRs and endpoints', () => {
    expect(canonicalCidr('10.1.2.3/24')).toBe('10.1.2.0/24');
    expect(canonicalCidr('FD00:ABCD::1/64')).toBe('fd00:abcd::/64');
    expect(canonicalCidr('10.0.0.0/33')).toBeUndefined();
    expect(canonicalEndpoint('[FD00::0001]:51820')).toBe('[fd00::1]:51820');
    expect(canonicalEndpoint('192.0.2.1:51820')).toBe('192.0.2.1:51820');
    expect(canonicalEndpoint('example.com:51820')).toBeUndefined();
    expect(canonicalEndpoint('192.0.2.1:0')).toBeUndefined();
  });

  it('merges overlapping and adjacent intervals per family and prints the shortest element', () => {
    const ivs = ['10.0.0.0/25', '10.0.0.128/25', '10.0.0.5', 'fd00::1-fd00::3', '192.168.1.1-192.168.1.9', '::1']
      .map(rangeToInterval)
      .filter((x) => x !== undefined);
    expect(mergeIntervals(ivs).map(formatInterval)).toEqual([
      '10.0.0.0/24',
      '192.168.1.1-192.168.1.9',
      '::1',
      'fd00::1-fd00::3',
    ]);
    expect(rangeToInterval('10.0.0.9-10.0.0.1')).toBeUndefined();
    expect(rangeToInterval('10.0.0.1-fd00::1')).toBeUndefined();
  });

  it('orders CIDRs by family, address, prefix', () => {
    expect(['fd00::/8', '10.0.0.0/16', '9.0.0.0/8', '10.0.0.0/8'].sort(compareCidrs)).toEqual([
      '9.0.0.0/8',
      '10.0.0.0/8',
      '10.0.0.0/16',
      'fd00::/8',
    ]);
  });
});
