import { describe, expect, it } from 'vitest';
import { renderNftables, renderWireGuard } from '../../../src/agent/dataplane/index.js';
import { expectGolden } from './golden.js';
import { allowAllScenario, fullScenario, missingGroupScenario, referencesScenario } from './scenarios.js';

describe('renderers', () => {
  it('renders wg-quick configuration', () => {
    expectGolden('wireguard-full.conf', renderWireGuard(fullScenario()));
    expectGolden('wireguard-allow-all.conf', renderWireGuard(allowAllScenario()));
  });

  it('renders the nftables ruleset', () => {
    expectGolden('nftables-full.conf', renderNftables(fullScenario()));
    expectGolden('nftables-allow-all.conf', renderNftables(allowAllScenario()));
    expectGolden('nftables-missing-group.conf', renderNftables(missingGroupScenario()));
    expectGolden('nftables-references.conf', renderNftables(referencesScenario()));
  });

  it('matches the devices a rule names through one named set per reference, not a rule per device', () => {
    const desired = referencesScenario();
    const text = renderNftables(desired);
    // tag:app: device 2, device 3 and its approved routes; group:ops: device 4; group:db has no member yet.
    expect(text).toContain('\tset ref4_v4 {\n\t\ttype ipv4_addr\n\t\tflags interval\n\t\telements = { 10.30.0.0/24, 100.64.0.2/31 }\n\t}');
    expect(text).toContain('\tset ref4_v6 {\n\t\ttype ipv6_addr\n\t\tflags interval\n\t\telements = { fd00:30::/64 }\n\t}');
    expect(text).toContain('\t\tip saddr @ref4_v4 tcp dport 5432 accept');
    expect(text).toContain('\t\tip6 saddr @ref4_v6 tcp dport 5432 accept');
    expect(text).toContain('\t\tip saddr 10.9.0.0/16 tcp dport 22 accept');
    expect(text).toContain('\t\tip saddr @ref3_v4 tcp dport 22 accept');
    expect(text).toContain('\t\tip saddr @ref4_v4 tcp dport 22 accept');
    // group by id (icmp: IPv4 only) names the same members as group:ops.
    expect(text).toContain('\t\tip saddr @ref0_v4 meta l4proto icmp accept');
    expect(text).not.toContain('10.40.0.0');
    expect(text).not.toMatch(/@ref[12]_v/);
    expect(desired.skipped).toContainEqual({ kind: 'reference', subject: 'group:gone', reason: 'no security group of this name or id' });
  });

  it('keeps client-supplied hostnames from injecting configuration', () => {
    const text = renderWireGuard(fullScenario());
    expect(text.match(/^\[Peer\]/gm)).toHaveLength(3);
    expect(text).toContain('# router__Peer__evil (');
  });

  it('replaces the table atomically and drops only on the tunnel interface', () => {
    const text = renderNftables(fullScenario());
    const lines = text.split('\n');
    expect(lines.slice(1, 3)).toEqual(['table inet fleetplane', 'delete table inet fleetplane']);
    expect(text).toContain('iifname "fp0" jump tunnel-in');
    expect(text).toContain('oifname "fp0" jump tunnel-out');
    expect(text.match(/policy accept;/g)).toHaveLength(2);
    expect(text.match(/^\t\tdrop$/gm)).toHaveLength(2);
  });
});
