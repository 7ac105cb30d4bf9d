import { describe, expect, it } from 'vitest';
import { renderNftables, renderWireGuard } from '../../../src/agent/dataplane/index.js';
import { expectGolden } from './golden.js';
import { allowAllScenario, fullScenario, missingGroupScenario } from './scenarios.js';

describe('renderers', () => {
  it('renders wg-quick configuration', () => {
    expectGolden('wireguard-full.conf', renderWireGuard(fullScenario()));
    expectGolden('wireguard-allow-all.conf', renderWireGuard(allowAllScenario()));
  });

  it('renders the nftables ruleset', () => {
    expectGolden('nftables-full.conf', renderNftables(fullScenario()));
    expectGolden('nftables-allow-all.conf', renderNftables(allowAllScenario()));
    expectGolden('nftables-missing-group.conf', renderNftables(missingGroupScenario()));
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
