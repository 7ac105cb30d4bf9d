/**
 * `fleetplane ctl <resource> get` for people: a field a line in a stable
 * order (id and the name first, timestamps last), nested values as indented
 * YAML; `-o json|yaml` the object as the server sent it.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { describeObject, orderedFields } from '../../src/cli/ctl/describe.js';
import { FakeFleetServer } from './support/fake-fleet-server.js';
import { ago, ctlRunner } from './support/ctl-runner.js';

let server: FakeFleetServer;
const ctl = ctlRunner(() => server);

const NETWORK = { ipv4_cidr: '100.64.0.0/16', mtu: 1420, resolvers: ['10.0.0.53'], routes: [{ destination: '10.20.0.0/16', via: '100.64.0.9' }] };

beforeEach(async () => {
  server = await new FakeFleetServer().start();
  // Keys in an order no reader would choose: the output must not depend on it.
  server.put('organization', {
    updated_at: '2030-01-02T00:00:00Z',
    tag_owners: {},
    network: NETWORK,
    description: 'ACME production',
    created_at: '2030-01-01T00:00:00Z',
    name: 'acme',
    audit_readable_by_read: false,
    id: server.org,
  });
});
afterEach(async () => {
  await server.close();
});

/** The field names of a describe listing, in order (the top-level keys: lines not indented). */
const keysOf = (text: string): string[] => text.split('\n').filter((l) => /^[a-z_]+:/.test(l)).map((l) => l.slice(0, l.indexOf(':')));

describe('describeObject', () => {
  it('orders id, the name, the listed fields, the rest alphabetically, revision and created_by, then the timestamps', () => {
    const value = { zeta: 1, updated_at: 'u', revision: 3, expires_at: 'e', alpha: 2, created_by: { kind: 'admin' }, created_at: 'c', hostname: 'h', role: 'r', id: 'i', name: 'n' };
    expect(orderedFields(value, ['role']).map(([k]) => k)).toEqual(['id', 'name', 'hostname', 'role', 'alpha', 'zeta', 'revision', 'created_by', 'created_at', 'updated_at', 'expires_at']);
    // The same fields in another order: the same listing.
    const shuffled = Object.fromEntries(Object.entries(value).reverse());
    expect(describeObject(shuffled, ['role'])).toBe(describeObject(value, ['role']));
  });

  it('aligns scalars, shows nothing as -, an empty list as [], and nests objects, lists and text of several lines as indented blocks', () => {
    const text = describeObject({ id: 'i', name: '', tags: [], note: 'one\ntwo', endpoints: [{ address: '192.0.2.1:51820', source: 'stun' }], network: { mtu: 1420, resolvers: ['10.0.0.53'] }, relay: false, gone: null, missing: undefined });
    expect(text).toBe(
      [
        'id:     i',
        'name:   -',
        'endpoints:',
        '  - address: 192.0.2.1:51820',
        '    source: stun',
        'gone:   -',
        'network:',
        '  mtu: 1420',
        '  resolvers:',
        '    - 10.0.0.53',
        'note:',
        '  one',
        '  two',
        'relay:  false',
        'tags:   []',
        '',
      ].join('\n'),
    );
  });
});

describe('fleetplane ctl get', () => {
  it('shows an organization field by field, network as YAML, timestamps last; -o json and -o yaml unchanged', async () => {
    const got = await ctl(['orgs', 'get', 'acme']);
    expect(got).toMatchObject({ code: 0, err: '' });
    expect(keysOf(got.out)).toEqual(['id', 'name', 'description', 'network', 'tag_owners', 'audit_readable_by_read', 'revision', 'created_at', 'updated_at']);
    expect(got.out).toContain(
      ['network:', '  ipv4_cidr: 100.64.0.0/16', '  mtu: 1420', '  resolvers:', '    - 10.0.0.53', '  routes:', '    - destination: 10.20.0.0/16', '      via: 100.64.0.9', ''].join('\n'),
    );
    expect(got.out).toMatch(/^description: +ACME production$/m);
    expect(got.out).not.toContain('{"');

    const sent = server.live.get('organization')!.get(server.org);
    const json = await ctl(['orgs', 'get', 'acme', '-o', 'json']);
    expect(json.out).toBe(`${JSON.stringify(sent, null, 2)}\n`);
    const yaml = await ctl(['orgs', 'get', 'acme', '-o', 'yaml']);
    expect(yaml.out.startsWith('updated_at: ')).toBe(true);
    expect(parseYaml(yaml.out)).toEqual(sent);
  });

  it('shows a device in its order, its status as a YAML block without the peers, and says when there are none', async () => {
    server.put('device', {
      updated_at: ago(60),
      status: { online: true, last_seen: ago(5), applied_revision: 1, apply_error: null, local_endpoints: ['192.168.1.5:51820'], os: 'linux', agent_version: '0.1.0', peers: [], peers_truncated: false },
      endpoints: [{ address: '198.51.100.7:51820', source: 'stun' }],
      tags: ['tag:web'],
      public_key: 'k',
      created_at: ago(120),
      tunnel_ip: '100.64.0.7',
      hostname: 'web-1',
      id: 'dev-1',
      organization_id: server.org,
      security_group_id: null,
      advertise_cidrs: [],
      approved_cidrs: [],
      relay: false,
      symmetric_nat: false,
      ephemeral: false,
    });
    const got = await ctl(['devices', 'get', 'web-1', '--org', 'acme']);
    expect(got).toMatchObject({ code: 0, err: '' });
    expect(keysOf(got.out)).toEqual([
      'id',
      'hostname',
      'tunnel_ip',
      'public_key',
      'security_group_id',
      'tags',
      'endpoints',
      'advertise_cidrs',
      'approved_cidrs',
      'relay',
      'symmetric_nat',
      'ephemeral',
      'organization_id',
      'status',
      'revision',
      'created_at',
      'updated_at',
      'peers',
    ]);
    expect(got.out).toContain(['status:', '  online: true', `  last_seen: ${ago(5)}`, '  applied_revision: 1', '  apply_error: null', '  local_endpoints:', '    - 192.168.1.5:51820', ''].join('\n'));
    expect(got.out).toContain(['tags:', '  - tag:web', 'endpoints:', '  - address: 198.51.100.7:51820', '    source: stun', ''].join('\n'));
    expect(got.out).not.toMatch(/peers_truncated|^ {2}peers:/m);
    expect(got.out).toMatch(/\npeers: none reported\n$/);
  });

  it('shows a security group with its rules as YAML; create and update answer in the same layout', async () => {
    const created = await ctl(['sg', 'create', '--org', 'acme', '--name', 'web', '--description', 'web tier', '--allow', 'tcp:443']);
    expect(created).toMatchObject({ code: 0, err: '' });
    expect(keysOf(created.out).slice(0, 4)).toEqual(['id', 'name', 'description', 'inbound_rules']);
    expect(created.out).toMatch(/^inbound_rules:\n {2}- ip_protocol: tcp\n {4}from_port: 443\n {4}to_port: 443\n/m);
    const updated = await ctl(['sg', 'update', 'web', '--org', 'acme', '--description', 'the web tier']);
    expect(updated.code, updated.err).toBe(0);
    expect(keysOf(updated.out).slice(0, 3)).toEqual(['id', 'name', 'description']);
    expect(updated.out).toMatch(/^description: +the web tier$/m);
    expect(keysOf(updated.out).slice(-2)).toEqual(['revision', 'created_at']);
  });

  it('says how it prints in get --help', async () => {
    const help = await ctl(['devices', 'get', '--help']);
    expect(help.out).toContain('Output: a field a line, like kubectl describe: id and the name first');
  });
});
