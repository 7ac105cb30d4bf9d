import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { interfaceEndpoints, MAX_ENDPOINTS, publishedEndpoints, sameEndpoints, type InterfaceTable } from '../../src/agent/index.js';
import type { StunState } from '../../src/agent/nat/index.js';
import { EndpointPublisher } from '../../src/agent/status/endpoint-publisher.js';
import { wantedSpec } from '../../src/agent/status/endpoints.js';
import { FleetplaneClient, type FetchLike } from '../../src/client/index.js';
import type { Endpoint } from '../../src/protocol/index.js';

const info = (address: string, family: 'IPv4' | 'IPv6', internal = false) => ({
  address,
  family,
  internal,
  netmask: '',
  mac: '00:00:00:00:00:00',
  cidr: null,
  ...(family === 'IPv6' ? { scopeid: 0 } : {}),
});

const TABLE: InterfaceTable = {
  lo: [info('127.0.0.1', 'IPv4', true), info('::1', 'IPv6', true)],
  eth0: [info('198.51.100.7', 'IPv4'), info('fe80::1', 'IPv6'), info('2001:db8::7', 'IPv6')],
  eth1: [info('192.0.2.3', 'IPv4'), info('169.254.1.1', 'IPv4')],
  wg0: [info('100.64.0.2', 'IPv4')],
} as InterfaceTable;

describe('endpoints', () => {
  it('publishes usable interface addresses with the listen port: no loopback, link-local or tunnel address', () => {
    expect(interfaceEndpoints(51820, 'wg0', TABLE)).toEqual(['192.0.2.3:51820', '198.51.100.7:51820', '[2001:db8::7]:51820']);
  });

  it('prefers the manual endpoints when given', () => {
    expect(publishedEndpoints(['192.0.2.9:1'], ['192.0.2.3:51820'])).toEqual([{ source: 'manual', address: '192.0.2.9:1' }]);
    expect(publishedEndpoints([], ['192.0.2.3:51820'])).toEqual([{ source: 'local', address: '192.0.2.3:51820' }]);
  });

  it('compares endpoint sets in any order', () => {
    const a: Endpoint[] = [{ source: 'local', address: '192.0.2.1:1' }, { source: 'manual', address: '192.0.2.2:1' }];
    expect(sameEndpoints(a, [...a].reverse())).toBe(true);
    expect(sameEndpoints(a, [{ source: 'local', address: '192.0.2.1:1' }])).toBe(false);
    expect(sameEndpoints(a, [{ source: 'local', address: '192.0.2.1:1' }, { source: 'local', address: '192.0.2.2:1' }])).toBe(false);
  });
});

describe('what the device publishes (wantedSpec)', () => {
  const manual = (address: string): Endpoint => ({ source: 'manual', address });
  const local = (address: string): Endpoint => ({ source: 'local', address });
  const stun = (address: string): Endpoint => ({ source: 'stun', address });
  const mapped = (endpoint: string, symmetric = false): StunState => ({ kind: 'mapped', endpoint, symmetric });
  const L = ['192.168.1.10:51820'];
  const M = ['198.51.100.5:51820'];
  const S = '203.0.113.101:20123';

  it.each<[string, readonly string[], readonly string[], StunState, { endpoints: Endpoint[]; symmetric_nat: boolean }]>([
    ['no manual: local, and the mapping', [], L, mapped(S), { endpoints: [stun(S), local(L[0]!)], symmetric_nat: false }],
    ['manual: manual and the mapping, no local', M, L, mapped(S), { endpoints: [manual(M[0]!), stun(S)], symmetric_nat: false }],
    ['a symmetric NAT: the mapping, and symmetric_nat', [], L, mapped(S, true), { endpoints: [stun(S), local(L[0]!)], symmetric_nat: true }],
    ['STUN off: no stun endpoint, symmetric_nat false', [], L, { kind: 'off' }, { endpoints: [local(L[0]!)], symmetric_nat: false }],
    ['manual, STUN off', M, L, { kind: 'off' }, { endpoints: [manual(M[0]!)], symmetric_nat: false }],
  ])('%s', (_what, m, l, state, expected) => {
    expect(wantedSpec(m, m.length > 0 ? [] : l, state, undefined)).toEqual(expected);
  });

  it('keeps what the server holds while the first probe is pending, and publishes nothing from STUN when it holds nothing', () => {
    const held = { endpoints: [local('192.168.1.9:51820'), stun(S)], symmetric_nat: true };
    expect(wantedSpec([], L, { kind: 'pending' }, held)).toEqual({ endpoints: [stun(S), local(L[0]!)], symmetric_nat: true });
    expect(wantedSpec([], L, { kind: 'pending' }, undefined)).toEqual({ endpoints: [local(L[0]!)], symmetric_nat: false });
  });

  it('never exceeds MAX_ENDPOINTS, losing local endpoints before the stun one', () => {
    const many = Array.from({ length: 40 }, (_, i) => `192.168.2.${i}:51820`);
    const spec = wantedSpec([], many, mapped(S), undefined);
    expect(spec.endpoints).toHaveLength(MAX_ENDPOINTS);
    expect(spec.endpoints[0]).toEqual(stun(S));
  });
});

describe('EndpointPublisher', () => {
  function setup(
    table: () => InterfaceTable,
    state: () => StunState = () => ({ kind: 'off' }),
    manualEndpoints: string[] = [],
    routes: { advertiseRoutes?: string[]; refuse?: (patch: Record<string, unknown>) => boolean } = {},
  ) {
    const patches: Record<string, unknown>[] = [];
    const fetch: FetchLike = async (_url, init) => {
      expect(init.method).toBe('PATCH');
      const patch = JSON.parse(String(init.body)) as Record<string, unknown>;
      patches.push(patch);
      if (routes.refuse?.(patch)) {
        const body = { error: { code: 'conflict', message: '10.20.0.0/16 overlaps 10.0.0.0/8, approved for device x (other)' } };
        return new Response(JSON.stringify(body), { status: 409, headers: { 'content-type': 'application/json' } });
      }
      return new Response(JSON.stringify({ id: 'd', revision: patches.length }), { status: 200, headers: { 'content-type': 'application/json' } });
    };
    const publisher = new EndpointPublisher({
      client: new FleetplaneClient({ baseUrl: 'http://fake', token: 't', fetch }),
      org: 'o',
      deviceId: 'd',
      manual: manualEndpoints,
      listenPort: 51820,
      interfaceName: 'wg0',
      logger: pino({ level: 'silent' }),
      interfaces: table,
      stun: state,
      ...(routes.advertiseRoutes ? { advertiseRoutes: routes.advertiseRoutes } : {}),
    });
    return { publisher, patches };
  }
  const held = (endpoints: Endpoint[], symmetric_nat = false) => ({ endpoints, symmetric_nat });

  it('PATCHes only when the endpoints change', async () => {
    let table: InterfaceTable = { eth0: [info('192.0.2.3', 'IPv4')] } as InterfaceTable;
    const { publisher, patches } = setup(() => table);
    // The server already has them (e.g. sent at enrollment): nothing to do.
    expect(await publisher.check(held([{ source: 'local', address: '192.0.2.3:51820' }]))).toBe(false);
    expect(await publisher.check(undefined)).toBe(false);
    table = { eth0: [info('192.0.2.4', 'IPv4')] } as InterfaceTable;
    expect(await publisher.check(undefined)).toBe(true);
    expect(await publisher.check(undefined)).toBe(false);
    expect(patches).toEqual([{ endpoints: [{ source: 'local', address: '192.0.2.4:51820' }] }]);
  });

  it('publishes at the first check when the server has something else', async () => {
    const { publisher, patches } = setup(() => ({ eth0: [info('192.0.2.3', 'IPv4')] }) as InterfaceTable);
    expect(await publisher.check(held([]))).toBe(true);
    expect(patches).toEqual([{ endpoints: [{ source: 'local', address: '192.0.2.3:51820' }] }]);
  });

  it('publishes a new or changed mapping in one PATCH, an unchanged one not at all, and only the fields that changed', async () => {
    let state: StunState = { kind: 'pending' };
    const { publisher, patches } = setup(() => ({ eth0: [info('192.168.1.10', 'IPv4')] }) as InterfaceTable, () => state, ['198.51.100.5:51820']);
    const m = { source: 'manual' as const, address: '198.51.100.5:51820' };
    // Pending after a restart: what the server holds (its earlier mapping) stays.
    expect(await publisher.check(held([m, stun(S)], true))).toBe(false);
    state = { kind: 'mapped', endpoint: S, symmetric: true };
    expect(await publisher.check(undefined)).toBe(false);
    state = { kind: 'mapped', endpoint: S, symmetric: false };
    expect(await publisher.check(undefined)).toBe(true);
    state = { kind: 'mapped', endpoint: '203.0.113.101:20999', symmetric: false };
    expect(await publisher.check(undefined)).toBe(true);
    expect(await publisher.check(undefined)).toBe(false);
    state = { kind: 'off' };
    expect(await publisher.check(undefined)).toBe(true);
    expect(await publisher.check(undefined)).toBe(false);
    expect(patches).toEqual([
      { symmetric_nat: false },
      { endpoints: [m, stun('203.0.113.101:20999')] },
      { endpoints: [m] },
    ]);
  });

  it('sets symmetric_nat and the stun endpoint together at the first mapping', async () => {
    let state: StunState = { kind: 'pending' };
    const { publisher, patches } = setup(() => ({ eth0: [info('192.168.2.10', 'IPv4')] }) as InterfaceTable, () => state);
    const l = local('192.168.2.10:51820');
    expect(await publisher.check(held([l]))).toBe(false);
    state = { kind: 'mapped', endpoint: '203.0.113.102:31000', symmetric: true };
    expect(await publisher.check(held([l]))).toBe(true);
    expect(patches).toEqual([{ endpoints: [stun('203.0.113.102:31000'), l], symmetric_nat: true }]);
  });

  describe('the route request (--advertise-routes)', () => {
    const table = (): InterfaceTable => ({ eth0: [info('192.0.2.3', 'IPv4')] }) as InterfaceTable;
    const l = local('192.0.2.3:51820');
    const held = (advertise_cidrs: string[], endpoints: Endpoint[] = [l]) => ({ endpoints, symmetric_nat: false, advertise_cidrs });

    it('sets advertise_cidrs at the first check when the device holds other prefixes, in one PATCH with changed endpoints', async () => {
      const same = setup(table, undefined, [], { advertiseRoutes: ['10.20.0.0/16', 'fd00:20::/48'] });
      // The same prefixes, in another order and spelling: nothing to do.
      expect(await same.publisher.check(held(['FD00:20::/48', '10.20.0.0/16']))).toBe(false);
      expect(same.patches).toEqual([]);

      const changed = setup(table, undefined, [], { advertiseRoutes: ['10.30.0.0/24'] });
      expect(await changed.publisher.check(held(['10.20.0.0/16']))).toBe(true);
      expect(await changed.publisher.check(held(['10.20.0.0/16']))).toBe(false);
      expect(changed.patches).toEqual([{ advertise_cidrs: ['10.30.0.0/24'] }]);

      const both = setup(table, undefined, [], { advertiseRoutes: ['10.30.0.0/24'] });
      expect(await both.publisher.check(held([], []))).toBe(true);
      expect(both.patches).toEqual([{ endpoints: [l], advertise_cidrs: ['10.30.0.0/24'] }]);
    });

    it('clears the request when the agent requests nothing, and leaves it alone when it does not manage it', async () => {
      const cleared = setup(table, undefined, [], { advertiseRoutes: [] });
      expect(await cleared.publisher.check(held(['10.20.0.0/16']))).toBe(true);
      expect(cleared.patches).toEqual([{ advertise_cidrs: [] }]);

      const unmanaged = setup(table);
      expect(await unmanaged.publisher.check(held(['10.20.0.0/16']))).toBe(false);
      expect(unmanaged.patches).toEqual([]);
    });

    it('a refused request (409) does not keep the endpoints from being published, and is not sent again', async () => {
      let now = table;
      const { publisher, patches } = setup(() => now(), undefined, [], { advertiseRoutes: ['10.20.0.0/16'], refuse: (p) => 'advertise_cidrs' in p });
      expect(await publisher.check(held([], []))).toBe(true);
      expect(patches).toEqual([{ endpoints: [l], advertise_cidrs: ['10.20.0.0/16'] }, { endpoints: [l] }]);
      now = () => ({ eth0: [info('192.0.2.4', 'IPv4')] }) as InterfaceTable;
      expect(await publisher.check(undefined)).toBe(true);
      expect(patches.at(-1)).toEqual({ endpoints: [local('192.0.2.4:51820')] });
    });
  });
});

const S = '203.0.113.101:20123';
const stun = (address: string): Endpoint => ({ source: 'stun', address });
const local = (address: string): Endpoint => ({ source: 'local', address });
