/**
 * The forward and nat chains of a subnet router and of the relay device
 * (render-nftables-routing.ts), in the whole rendered table: what they hold,
 * that the own-table check passes them, and, where the machine has `nft`
 * and root, that nft loads them in a network namespace next to another
 * table, which stays untouched.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  assertOwnTableOnly,
  renderNftables,
  RenderValueError,
  type DesiredDataplane,
} from '../../../src/agent/dataplane/index.js';
import type { DeviceObject } from '../../../src/protocol/index.js';
import { toolsUsable, ToolBench } from './config-checks.js';
import { desiredStateOf, device } from './fixtures.js';
import { expectGolden } from './golden.js';

const OPEN = [{ source: 'manual' as const, address: '198.51.100.1:51820' }];

/** Device 1's desired state among `devices` (device 1 first, with `self` applied). */
function desiredOf(self: Partial<DeviceObject>, others: DeviceObject[] = [device(2)]): DesiredDataplane {
  return desiredStateOf(1, {
    devices: [device(1, self), ...others],
    securityGroups: [],
  });
}

const ROUTES = ['10.20.0.0/16', '192.168.5.0/24', 'fd00:20::/48'];
const subnetRouter = () => desiredOf({ advertise_cidrs: ROUTES });
const relayDevice = () => desiredOf({ relay: true, endpoints: OPEN });
const both = () => desiredOf({ relay: true, endpoints: OPEN, advertise_cidrs: ROUTES });

/** The lines of chain `name` (from its opening line to its closing one), or [] when the table has none. */
function chain(text: string, name: string): string[] {
  const lines = text.split('\n');
  const start = lines.indexOf(`\tchain ${name} {`);
  if (start < 0) return [];
  return lines.slice(start, lines.indexOf('\t}', start) + 1);
}

const nftUsable = toolsUsable('nft -c -f / nft -f of the routing chains in a network namespace', ['ip', 'nft']);
const bench = new ToolBench(`r${process.pid.toString(36)}`);
beforeAll(async () => {
  if (nftUsable) await bench.start(false);
}, 30_000);
afterAll(async () => {
  if (nftUsable) await bench.stop();
});

describe('render-nftables-routing: the forward and nat chains', () => {
  it('a subnet router forwards from the tunnel to its routes only, and masquerades what it forwards there', () => {
    const desired = subnetRouter();
    expect([desired.forwarding, desired.subnet_routes]).toEqual([false, ['10.20.0.0/16', '192.168.5.0/24', 'fd00:20::/48']]);
    const text = renderNftables(desired);
    expect(chain(text, 'forward')).toEqual([
      '\tchain forward {',
      '\t\ttype filter hook forward priority filter; policy accept;',
      '\t\tiifname "fp0" ip daddr { 10.20.0.0/16, 192.168.5.0/24 } accept',
      '\t\tiifname "fp0" ip6 daddr fd00:20::/48 accept',
      '\t\tiifname "fp0" drop',
      '\t}',
    ]);
    expect(chain(text, 'postrouting')).toEqual([
      '\tchain postrouting {',
      '\t\ttype nat hook postrouting priority srcnat; policy accept;',
      '\t\tiifname "fp0" ip daddr { 10.20.0.0/16, 192.168.5.0/24 } masquerade',
      '\t\tiifname "fp0" ip6 daddr fd00:20::/48 masquerade',
      '\t}',
    ]);
    expect(() => assertOwnTableOnly(text)).not.toThrow();
    expectGolden('nftables-subnet-router.conf', text);
  });

  it('the relay device forwards between its peers and nowhere else, and masquerades nothing', () => {
    const text = renderNftables(relayDevice());
    expect(chain(text, 'forward')).toEqual([
      '\tchain forward {',
      '\t\ttype filter hook forward priority filter; policy accept;',
      '\t\tiifname "fp0" oifname "fp0" accept',
      '\t\tiifname "fp0" drop',
      '\t}',
    ]);
    expect(chain(text, 'postrouting')).toEqual([]);
  });

  it('a relay device that serves routes has one forward chain for both, the drop last', () => {
    const text = renderNftables(both());
    expect(chain(text, 'forward')).toEqual([
      '\tchain forward {',
      '\t\ttype filter hook forward priority filter; policy accept;',
      '\t\tiifname "fp0" oifname "fp0" accept',
      '\t\tiifname "fp0" ip daddr { 10.20.0.0/16, 192.168.5.0/24 } accept',
      '\t\tiifname "fp0" ip6 daddr fd00:20::/48 accept',
      '\t\tiifname "fp0" drop',
      '\t}',
    ]);
    expect(chain(text, 'postrouting')).toHaveLength(5);
    expect(text.match(/^\tchain forward \{$/gm)).toHaveLength(1);
    expect(() => assertOwnTableOnly(text)).not.toThrow();
  });

  it('a device that forwards nothing has neither chain: requested routes no admin approved forward nothing', () => {
    for (const desired of [desiredOf({}), desiredOf({ advertise_cidrs: ROUTES, approved_cidrs: [] })]) {
      const text = renderNftables(desired);
      expect(text).not.toContain('chain forward');
      expect(text).not.toContain('chain postrouting');
      expect(text).not.toContain('masquerade');
    }
  });

  it('merges overlapping and adjacent routes into set elements nft accepts', () => {
    const desired = { ...subnetRouter(), subnet_routes: ['10.0.0.0/8', '10.1.0.0/16', '172.16.0.0/13', '172.24.0.0/13', 'fd00::/16', 'fd00:1::/32'] };
    const text = renderNftables(desired);
    expect(chain(text, 'postrouting').slice(2, 4)).toEqual([
      '\t\tiifname "fp0" ip daddr { 10.0.0.0/8, 172.16.0.0/12 } masquerade',
      '\t\tiifname "fp0" ip6 daddr fd00::/16 masquerade',
    ]);
  });

  it.each([
    ['a route with host bits', '10.20.0.1/16'],
    ['a route that is not a CIDR', '10.20.0.0'],
    ['a route that ends the chain', '10.20.0.0/16 } ; flush ruleset'],
    ['a route with a line break', '10.20.0.0/16\nflush ruleset'],
  ])('refuses %s (RenderValueError): nothing is rendered', (_what, route) => {
    expect(() => renderNftables({ ...subnetRouter(), subnet_routes: [route] })).toThrow(RenderValueError);
  });

  it.runIf(nftUsable)('nft checks and loads each table next to another one, which stays untouched', async () => {
    for (const desired of [subnetRouter(), relayDevice(), both()]) {
      expect(await bench.nftProblems(renderNftables(desired))).toEqual([]);
    }
  }, 30_000);
});
