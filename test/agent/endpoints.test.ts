import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { interfaceEndpoints, publishedEndpoints, sameEndpoints, type InterfaceTable } from '../../src/agent/index.js';
import { EndpointPublisher } from '../../src/agent/endpoint-publisher.js';
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

describe('EndpointPublisher', () => {
  function setup(table: () => InterfaceTable) {
    const patches: unknown[] = [];
    const fetch: FetchLike = async (_url, init) => {
      expect(init.method).toBe('PATCH');
      patches.push(JSON.parse(String(init.body)));
      return new Response(JSON.stringify({ id: 'd', revision: patches.length }), { status: 200, headers: { 'content-type': 'application/json' } });
    };
    const publisher = new EndpointPublisher({
      client: new FleetplaneClient({ baseUrl: 'http://fake', token: 't', fetch }),
      org: 'o',
      deviceId: 'd',
      manual: [],
      listenPort: 51820,
      interfaceName: 'wg0',
      logger: pino({ level: 'silent' }),
      interfaces: table,
    });
    return { publisher, patches };
  }

  it('PATCHes only when the endpoints change', async () => {
    let table: InterfaceTable = { eth0: [info('192.0.2.3', 'IPv4')] } as InterfaceTable;
    const { publisher, patches } = setup(() => table);
    // The server already has them (e.g. sent at enrollment): nothing to do.
    expect(await publisher.check([{ source: 'local', address: '192.0.2.3:51820' }])).toBe(false);
    expect(await publisher.check(undefined)).toBe(false);
    table = { eth0: [info('192.0.2.4', 'IPv4')] } as InterfaceTable;
    expect(await publisher.check(undefined)).toBe(true);
    expect(await publisher.check(undefined)).toBe(false);
    expect(patches).toEqual([{ endpoints: [{ source: 'local', address: '192.0.2.4:51820' }] }]);
  });

  it('publishes at the first check when the server has something else', async () => {
    const { publisher, patches } = setup(() => ({ eth0: [info('192.0.2.3', 'IPv4')] }) as InterfaceTable);
    expect(await publisher.check([])).toBe(true);
    expect(patches).toHaveLength(1);
  });
});
