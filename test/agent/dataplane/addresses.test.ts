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
