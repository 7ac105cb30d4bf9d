import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { ENTRIES } from '../../src/cli/ctl/commands.js';
import { isGroup } from '../../src/cli/ctl/command-spec.js';
import { packageVersion } from '../../src/cli/version.js';
import { expectedVersionLine } from '../support/version-line.js';
import { FakeFleetServer } from './support/fake-fleet-server.js';
import { ago, ctlRunner, freshConfigPath } from './support/ctl-runner.js';
import { TEST_CERT, TEST_KEY } from './support/tls-fixture.js';

let server: FakeFleetServer;
const ctl = ctlRunner(() => server);

const NETWORK = { ipv4_cidr: '100.64.0.0/16', mtu: 1420, resolvers: [], routes: [] };

beforeEach(async () => {
  server = await new FakeFleetServer().start();
  server.put('organization', { id: server.org, name: 'acme', description: '', network: NETWORK });
});
afterEach(async () => {
  await server.close();
});

const status = (lastSeen: string | null, extra: Record<string, unknown> = {}) => ({
  online: lastSeen !== null,
  last_seen: lastSeen,
  applied_revision: 1,
  apply_error: null,
  local_endpoints: [],
  os: null,
  agent_version: '0.1.0',
  ...extra,
});
const device = (hostname: string, extra: Record<string, unknown> = {}) => ({
  hostname,
  tunnel_ip: '100.64.0.2',
  public_key: 'k',
  advertise_cidrs: [],
  approved_cidrs: [],
  endpoints: [],
  security_group_id: null,
  status: status(ago(5)),
  ...extra,
});

/** Paths (without query) the fake server was asked for, after the first `from`. */
const requested = (from = 0) => server.requests.slice(from).map((r) => `${r.method} ${r.url.split('?')[0]}`);

describe('fleetplane ctl: lists, names, output', () => {
  it('lists devices with ONLINE and LAST SEEN, as a table, wide, JSON and YAML', async () => {
    const a = server.put('device', { ...device('alpha'), id: 'dev-a' });
    server.put('device', { ...device('beta', { status: status(ago(3 * 3600)) }), id: 'dev-b' });
    server.put('device', { ...device('gamma', { status: status(null, { applied_revision: 4 }) }), id: 'dev-c' });
    expect(server.head).toBe(4);
    const table = await ctl(['devices', 'list', '--org', server.org]);
    expect(table).toMatchObject({ code: 0, err: '' });
    const [header, ...rows] = table.out.trimEnd().split('\n');
    // APPLIED against the organization's head; no object revision beside it to mistake for either.
    expect(header).toMatch(/^ID\s+HOSTNAME\s+TUNNEL IP\s+ONLINE\s+LAST SEEN\s+APPLIED$/);
    expect(rows[0]).toMatch(/^dev-a\s+alpha\s+100\.64\.0\.2\s+true\s+5s\s+1 \(head 4\)$/);
    expect(rows[1]).toMatch(/^dev-b\s+beta\s+\S+\s+true\s+3h\s/);
    expect(rows[2]).toMatch(/^dev-c\s+gamma\s+\S+\s+false\s+never\s+4 \(head\)$/);

    // The object's revision only wide, named as such.
    const wide = await ctl(['devices', 'list', '--org', server.org, '-o', 'wide']);
    const [wideHeader, wideFirst] = wide.out.split('\n');
    expect(wideHeader).toMatch(/APPLIED\s+OBJ-REV\s+PUBLIC KEY\s+SECURITY GROUP\s+TAGS\s+AGENT\s+ENDPOINTS\s+PENDING ROUTES\s+APPLY ERROR\s+EPHEMERAL\s+TOKEN EXPIRES$/);
    expect(wideFirst).toMatch(/^dev-a\s.*\s1 \(head 4\)\s+2\s+k\s/);
    const help = await ctl(['devices', 'list', '--help']);
    expect(help.out).toContain('APPLIED is the organization revision the agent last applied');
    expect(help.out).toContain('OBJ-REV, the revision of the device object itself');

    const json = await ctl(['devices', 'list', '--org', server.org, '--output', 'json']);
    expect((JSON.parse(json.out) as unknown[])[0]).toEqual(a);
    const yaml = await ctl(['devices', 'list', '--org', server.org, '-o', 'yaml']);
    expect(yaml.out).toMatch(/^- hostname: alpha\n {2}tunnel_ip: 100\.64\.0\.2\n/);
    expect(parseYaml(yaml.out)).toEqual(JSON.parse(json.out));
    const one = await ctl(['devices', 'get', 'alpha', '--org', 'acme', '-oyaml']);
    expect(parseYaml(one.out)).toEqual(a);
  });

  it('lists organizations without their object revision, which is not their head; -o wide shows it as OBJ-REV', async () => {
    server.put('device', { ...device('alpha'), id: 'dev-a' });
    const table = await ctl(['orgs', 'list']);
    expect(table).toMatchObject({ code: 0, err: '' });
    const [header, row] = table.out.trimEnd().split('\n');
    expect(header).toMatch(/^ID\s+NAME\s+CIDR\s+MTU\s+DESCRIPTION$/);
    expect(row).toMatch(new RegExp(`^${server.org}\\s+acme\\s+100\\.64\\.0\\.0/16\\s+1420\\s+-$`));
    const wide = await ctl(['orgs', 'list', '-o', 'wide']);
    const [wideHeader, wideRow] = wide.out.trimEnd().split('\n');
    expect(wideHeader).toMatch(/^ID\s+NAME\s+CIDR\s+MTU\s+OBJ-REV\s+RESOLVERS\s+ROUTES\s+CREATED\s+DESCRIPTION$/);
    expect(wideRow).toMatch(/\s1420\s+1\s/);
    const json = await ctl(['orgs', 'list', '-o', 'json']);
    expect(JSON.parse(json.out)).toEqual([server.live.get('organization')!.get(server.org)]);
    expect((await ctl(['orgs', 'list', '--help'])).out).toContain("The organization's head revision, which every change of its devices and groups advances, is\nwhat fleetplane ctl status prints.");
  });

  it('takes an organization name for --org, and says when no organization has it', async () => {
    server.put('device', { ...device('alpha'), id: 'dev-a' });
    const before = server.requests.length;
    const r = await ctl(['devices', 'list', '--org', 'acme']);
    expect(r).toMatchObject({ code: 0, err: '' });
    expect(r.out).toMatch(/^dev-a\s+alpha/m);
    expect(requested(before)).toEqual(['GET /api/organizations', `GET /api/organizations/${server.org}/devices`]);
    // An id is used as is: no lookup.
    const byId = server.requests.length;
    await ctl(['devices', 'list', '--org', server.org]);
    expect(requested(byId)).toEqual([`GET /api/organizations/${server.org}/devices`]);

    const missing = await ctl(['devices', 'list', '--org', 'globex']);
    expect(missing).toEqual({ code: 1, out: '', err: 'error: no organization named "globex"\n' });
  });

  it('finds a device by hostname or tunnel IP; an ambiguous hostname lists the candidates', async () => {
    server.put('device', { ...device('web-1', { tunnel_ip: '100.64.0.7' }), id: 'dev-1' });
    server.put('device', { ...device('db', { tunnel_ip: '100.64.0.8' }), id: 'dev-2' });
    const byName = await ctl(['device', 'get', 'web-1', '--org', 'acme', '-o', 'json']);
    expect(JSON.parse(byName.out)).toMatchObject({ id: 'dev-1' });
    const byIp = await ctl(['dev', 'get', '100.64.0.8', '--org', 'acme', '-o', 'json']);
    expect(JSON.parse(byIp.out)).toMatchObject({ id: 'dev-2' });

    const del = await ctl(['devices', 'delete', 'db', '--org', 'acme']);
    expect(del).toMatchObject({ code: 0, out: 'deleted device db (dev-2)\n' });
    expect(server.live.get('device')!.has('dev-2')).toBe(false);

    server.put('device', { ...device('web-1'), id: 'dev-3' });
    const twice = await ctl(['devices', 'get', 'web-1', '--org', 'acme']);
    expect(twice).toEqual({
      code: 1,
      out: '',
      err: 'error: "web-1" is ambiguous: 2 devices in organization acme have that name (dev-1, dev-3); use an id instead\n',
    });
    const none = await ctl(['devices', 'rpc', 'web-9', 'ping', '--org', 'acme']);
    expect(none).toMatchObject({ code: 1, err: 'error: no device named "web-9" in organization acme\n' });
  });

  it('creates, gets, updates with If-Match and deletes', async () => {
    const created = await ctl(['devices', 'create', '--org', server.org, '--hostname', 'h1', '--data', '{"public_key":"k","relay":true}', '-o', 'json']);
    expect(created.code).toBe(0);
    const dev = JSON.parse(created.out) as { id: string; revision: number };
    expect(dev).toMatchObject({ hostname: 'h1', public_key: 'k', relay: true, device_token: 'fpd_secret' });

    const got = await ctl(['devices', 'get', dev.id, '--org', server.org]);
    expect(got.out).toMatch(/^hostname: +h1$/m);

    const stale = await ctl(['devices', 'update', 'h1', '--org', 'acme', '--hostname', 'h2', '--if-match', String(dev.revision + 7)]);
    expect(stale.code).toBe(1);
    expect(stale.err).toMatch(/^error: .*\(precondition_failed, HTTP 412\)\n$/);

    const ok = await ctl(['devices', 'update', 'h1', '--org', 'acme', '--hostname', 'h2', '--if-match', String(dev.revision)]);
    expect(ok.code).toBe(0);
    expect(server.live.get('device')!.get(dev.id)?.['hostname']).toBe('h2');

    const del = await ctl(['devices', 'delete', dev.id, '--org', server.org]);
    expect(del).toMatchObject({ code: 0, out: `deleted device ${dev.id}\n` });
  });

  it('sets a device security group by description, and clears it with ""', async () => {
    server.put('security-group', { id: 'sg-web', description: 'web', inbound_rules: [], outbound_rules: [] });
    server.put('device', { ...device('h1'), id: 'dev-1' });
    expect((await ctl(['devices', 'update', 'h1', '--org', 'acme', '--security-group', 'web'])).code).toBe(0);
    expect(JSON.parse(server.requests.at(-1)!.body)).toEqual({ security_group_id: 'sg-web' });
    expect((await ctl(['devices', 'update', 'h1', '--org', 'acme', '--security-group='])).code).toBe(0);
    expect(JSON.parse(server.requests.at(-1)!.body)).toEqual({ security_group_id: null });
  });

  it('approves a device\'s routes with --approved-routes, replacing the list ("" for none), and shows pending ones wide', async () => {
    server.put('device', { ...device('h1'), id: 'dev-1', advertise_cidrs: ['10.20.0.0/16', '10.30.0.0/16'], approved_cidrs: ['10.30.0.0/16'] });
    const wide = await ctl(['devices', 'list', '--org', 'acme', '-o', 'wide']);
    expect(wide.out.split('\n')[1]).toMatch(/\s10\.20\.0\.0\/16\s/);
    expect(wide.out.split('\n')[1]).not.toContain('10.30.0.0/16');
    expect((await ctl(['devices', 'update', 'h1', '--org', 'acme', '--approved-routes', '10.20.0.0/16, fd00:20::/48'])).code).toBe(0);
    expect(JSON.parse(server.requests.at(-1)!.body)).toEqual({ approved_cidrs: ['10.20.0.0/16', 'fd00:20::/48'] });
    expect((await ctl(['devices', 'update', 'h1', '--org', 'acme', '--approved-routes='])).code).toBe(0);
    expect(JSON.parse(server.requests.at(-1)!.body)).toEqual({ approved_cidrs: [] });
  });

  it('reads --data from a file', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'fp-ctl-'));
    await writeFile(join(dir, 'g.json'), JSON.stringify({ description: 'web', inbound_rules: [] }));
    const r = await ctl(['security-groups', 'create', '--org', server.org, '--data', `@${join(dir, 'g.json')}`, '-o', 'json']);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.out)).toMatchObject({ description: 'web' });
  });

  it('creates a token and a registration key, showing the secret once', async () => {
    const t = await ctl(['tokens', 'create', '--org', 'acme', '--role', 'read', '--description', 'ci', '-o', 'json']);
    expect(JSON.parse(t.out)).toMatchObject({ role: 'read', token: 'fpt_secret' });
    const k = await ctl(['registration-key', 'create', '--org', 'acme', '--single-use']);
    // The secret right after the description, not lost among the other fields.
    expect(k.out).toMatch(/^id: +\S+\ndescription: +\S+\nkey: +fpr_secret$/m);
    expect(k.err).toContain('shown only this once');
    expect(JSON.parse(server.requests.at(-1)!.body)).toEqual({ single_use: true });
  });

  it('calls an agent method with params and wait', async () => {
    const d1 = '11111111-1111-4111-8111-111111111111';
    server.put('device', { id: d1, hostname: 'x' });
    const r = await ctl(['devices', 'rpc', 'x', 'ping', '--org', 'acme', '--params', '{"a":1}', '--wait', '3', '-o', 'json']);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.out)).toMatchObject({ pong: true, wait: '3' });
    const missing = await ctl(['devices', 'rpc', d1, 'status', '--org', server.org]);
    expect(missing.code).toBe(1);
    expect(missing.err).toMatch(/\(agent_not_connected, HTTP 504\)/);
  });

  it.each([
    [['org', 'list'], 'organization'],
    [['organization', 'list'], 'organization'],
    [['organizations', 'list'], 'organization'],
    [['sg', 'list', '--org', 'acme'], 'security-group'],
    [['security-group', 'list', '--org', 'acme'], 'security-group'],
  ])('answers to %j', async (argv, kind) => {
    server.put(kind === 'organization' ? 'organization' : 'security-group', { id: 'x-1', name: 'n', description: 'd', inbound_rules: [], outbound_rules: [], network: {} });
    const r = await ctl(argv);
    expect(r).toMatchObject({ code: 0, err: '' });
    expect(r.out).toMatch(/^x-1\s/m);
  });

  it('trusts the certificates of --ca-file for https, and only those', async () => {
    const tls = await new FakeFleetServer({ tls: { cert: TEST_CERT, key: TEST_KEY } }).start();
    try {
      tls.put('organization', { id: tls.org, name: 'acme', network: NETWORK });
      const dir = await mkdtemp(join(tmpdir(), 'fp-ca-'));
      await writeFile(join(dir, 'ca.pem'), TEST_CERT);
      const env = { FLEETPLANE_URL: tls.url, FLEETPLANE_TOKEN: tls.token, FLEETPLANE_CONFIG: freshConfigPath() };
      const trusted = await ctl(['orgs', 'list', '--ca-file', join(dir, 'ca.pem')], { env });
      expect(trusted).toMatchObject({ code: 0, err: '' });
      expect(trusted.out).toMatch(new RegExp(`^${tls.org}\\s+acme\\s`, 'm'));
      const untrusted = await ctl(['orgs', 'list'], { env });
      expect(untrusted.code).toBe(1);
      expect(untrusted.err).toMatch(
        /^error: GET \/api\/organizations: fetch failed .*certificate.*\(network_error\); the server's certificate is not signed by a CA trusted here: pass its CA with --ca-file .*\n$/,
      );
      const noFile = await ctl(['orgs', 'list', '--ca-file', join(dir, 'nope.pem')], { env });
      expect(noFile).toMatchObject({ code: 1, err: expect.stringMatching(/^error: CA file .*nope\.pem: ENOENT/) });
    } finally {
      await tls.close();
    }
  });
});

describe('fleetplane ctl: help, version, usage errors and exit codes', () => {
  it('prints help with examples for every command and group, exit 0', async () => {
    for (const argv of [['--help'], ['-h'], ['help'], ['help', 'devices', 'list']]) {
      const r = await ctl(argv);
      expect([r.code, r.err]).toEqual([0, '']);
      expect(r.out).toMatch(/^Usage: fleetplane ctl /);
    }
    for (const entry of ENTRIES) {
      const commands = isGroup(entry) ? entry.commands.map((c) => [entry.name, c.name]) : [[entry.name]];
      for (const words of [...(isGroup(entry) ? [[entry.name]] : []), ...commands]) {
        const r = await ctl([...words, '--help'], { env: {} });
        expect({ words, code: r.code, err: r.err }).toEqual({ words, code: 0, err: '' });
        expect(r.out).toContain(`Usage: fleetplane ctl ${words.join(' ')}`);
        expect(r.out).toMatch(/\nExamples:\n {2}fleetplane ctl /);
      }
    }
    const list = await ctl(['devices', 'list', '-h']);
    expect(list.out).toMatch(/^ {2}-o, --output FORMAT +table, wide, json or yaml \(default table\)$/m);
    expect(list.out).toMatch(/^ {6}--server URL +server base URL \(env FLEETPLANE_URL; default: the context's\)$/m);
  });

  it('prints the package version', async () => {
    expect(await ctl(['--version'], { env: {} })).toEqual({ code: 0, out: expectedVersionLine(), err: '' });
    expect(packageVersion()).toMatch(/^\d+\.\d+\.\d+/);
  });

  it.each([
    [['devices', 'list', '--foo'], 'fleetplane ctl devices list: unknown flag --foo (see --help)'],
    [['devices', 'list', '--foo=1'], 'fleetplane ctl devices list: unknown flag --foo (see --help)'],
    [['devices', 'list', '-x'], 'fleetplane ctl devices list: unknown flag -x (see --help)'],
    [['devices', 'list', '--role', 'admin'], 'fleetplane ctl devices list: flag --role does not apply here (see --help)'],
    [['orgs', 'list', '--org', 'acme'], 'fleetplane ctl orgs list: flag --org does not apply here (see --help)'],
    [['devices', 'list', '--org'], 'fleetplane ctl devices list: flag --org needs a value (ORG) (see --help)'],
    [['--bogus'], 'fleetplane ctl: unknown flag --bogus (see --help)'],
    [['devices', 'list', '--sever=http://x'], 'fleetplane ctl devices list: unknown flag --sever (did you mean --server?) (see --help)'],
    [['invitations', 'create', '--org', 'o', '--expires-in', 'soon'], 'fleetplane ctl invitations create: --expires-in: "soon" is not a duration (e.g. 30, 10m, 1h30m, 7d) (see --help)'],
    [['planets', 'list'], 'fleetplane ctl: unknown command or resource "planets" (see --help)'],
    [['devices', 'fly'], 'fleetplane ctl devices: unknown verb "fly" (one of list, get, create, update, delete, approve-routes, expire, rpc) (see --help)'],
    [['devices'], 'fleetplane ctl devices: missing verb: list, get, create, update, delete, approve-routes, expire, rpc (see --help)'],
    [['devices', 'get', '--org', 'acme'], 'fleetplane ctl devices get: missing <device> (see --help)'],
    [['devices', 'get', 'a', 'b', '--org', 'acme'], 'fleetplane ctl devices get: unexpected argument "b" (see --help)'],
    [['devices', 'list'], 'fleetplane ctl devices list: --org is required for this command (or set a default: fleetplane ctl config set-context NAME --org ORG) (see --help)'],
    [['devices', 'list', '--org', 'o', '-o', 'xml'], 'fleetplane ctl devices list: --output must be one of table, wide, json, yaml, not "xml" (see --help)'],
    [['devices', 'update', 'x', '--org', 'o', '--hostname', 'h', '--if-match', 'abc'], 'fleetplane ctl devices update: --if-match must be a non-negative integer, not "abc" (see --help)'],
    [['tokens', 'create', '--org', 'o', '--role', 'root'], 'fleetplane ctl tokens create: --role must be one of admin, read (see --help)'],
    [['watch', '--org', 'o'], 'fleetplane ctl watch: watch needs at least one kind: device, security-group, organization or all (see --help)'],
    [['watch', 'planets', '--org', 'o'], 'fleetplane ctl watch: unknown kind "planets": use device, security-group, organization or all (see --help)'],
    [['devices', 'create', '--org', 'o', '--data', '{nope'], /^fleetplane ctl devices create: --data is not valid JSON: .* \(see --help\)$/],
    [['sg', 'create', '--org', 'o', '--allow', 'tcp:0'], 'fleetplane ctl security-groups create: --allow tcp:0: a port is 1..65535, not "0" (leave PORTS out for all ports) (see --help)'],
    [['sg', 'create', '--org', 'o', '--allow', 'sctp:9'], 'fleetplane ctl security-groups create: --allow "sctp:9": expected PROTO[:PORTS] with PROTO one of tcp, udp, icmp, icmpv6, any (see --help)'],
    [['sg', 'create', '--org', 'o', '--allow', 'icmp:8'], 'fleetplane ctl security-groups create: --allow icmp:8: only tcp and udp take ports (see --help)'],
    [['sg', 'create', '--org', 'o', '--allow', 'tcp:90-80'], 'fleetplane ctl security-groups create: --allow tcp:90-80: the range ends before it starts (see --help)'],
    [['sg', 'create', '--org', 'o', '--from', '10.0.0.0/8'], "fleetplane ctl security-groups create: --from must follow an --allow (it gives that rule's sources) (see --help)"],
    [['sg', 'create', '--org', 'o', '--egress-allow', 'any', '--from', '10.0.0.0/8'], "fleetplane ctl security-groups create: --from must follow an --allow (it gives that rule's sources) (see --help)"],
    [['sg', 'create', '--org', 'o', '--allow', 'tcp', '--from', '10.0.0.0/33'], 'fleetplane ctl security-groups create: --from "10.0.0.0/33": expected a CIDR (10.0.0.0/8), an IP, a range IP-IP, tag:<name> or group:<name> (see --help)'],
  ])('usage error %j → exit 2, one line, nothing asked of the server', async (argv, message) => {
    const before = server.requests.length;
    const r = await ctl(argv);
    expect(r.code).toBe(2);
    expect(r.out).toBe('');
    if (typeof message === 'string') expect(r.err).toBe(`${message}\n`);
    else expect(r.err.trimEnd()).toMatch(message);
    expect(r.err.trimEnd().split('\n')).toHaveLength(1);
    // Node's parseArgs wording must not leak.
    expect(r.err).not.toMatch(/Unknown option|ERR_PARSE_ARGS/);
    expect(server.requests.length).toBe(before);
  });

  it('prints usage with exit 2 when given nothing', async () => {
    const none = await ctl([]);
    expect(none.code).toBe(2);
    expect(none.err).toContain('Usage: fleetplane ctl');
  });

  it('reports API and network errors on one line with exit 1', async () => {
    const notFound = await ctl(['devices', 'get', '00000000-0000-0000-0000-000000000000', '--org', server.org]);
    expect(notFound).toMatchObject({ code: 1, err: 'error: device not found (not_found, HTTP 404)\n' });
    const denied = await ctl(['orgs', 'list', '--token', 'wrong']);
    expect(denied.code).toBe(1);
    expect(denied.err).toMatch(/\(unauthorized, HTTP 401\)\n$/);
    const down = await ctl(['orgs', 'list', '--server', 'http://127.0.0.1:1']);
    expect(down.code).toBe(1);
    expect(down.err).toMatch(/^error: GET \/api\/organizations: fetch failed.*\(network_error\)\n$/);
  });
});

describe('fleetplane ctl security-groups: rules as flags', () => {
  it('builds inbound and outbound rules from --allow/--from and --egress-allow/--to, in order', async () => {
    const r = await ctl([
      'sg', 'create', '--org', 'acme', '--description', 'web',
      '--allow', 'tcp:22', '--from', '10.0.0.0/8', '--from', '192.0.2.1,192.0.2.10-192.0.2.20',
      '--allow', 'UDP:51820-51830',
      '--allow', 'icmp',
      '--egress-allow', 'any',
      '--egress-allow', 'tcp:443', '--to', '203.0.113.0/24',
      '-o', 'json',
    ]);
    expect(r).toMatchObject({ code: 0, err: '' });
    expect(JSON.parse(server.requests.at(-1)!.body)).toEqual({
      description: 'web',
      inbound_rules: [
        { ip_protocol: 'tcp', from_port: 22, to_port: 22, ip_ranges: ['10.0.0.0/8', '192.0.2.1', '192.0.2.10-192.0.2.20'] },
        { ip_protocol: 'udp', from_port: 51820, to_port: 51830, ip_ranges: [] },
        { ip_protocol: 'icmp', from_port: 0, to_port: 0, ip_ranges: [] },
      ],
      outbound_rules: [
        { ip_protocol: 'any', from_port: 0, to_port: 0, ip_ranges: [] },
        { ip_protocol: 'tcp', from_port: 443, to_port: 443, ip_ranges: ['203.0.113.0/24'] },
      ],
    });
    const wide = await ctl(['sg', 'list', '--org', 'acme', '-o', 'wide']);
    expect(wide.out).toMatch(/tcp:22 from 10\.0\.0\.0\/8,192\.0\.2\.1,192\.0\.2\.10-192\.0\.2\.20; udp:51820-51830; icmp\s+any; tcp:443 to 203\.0\.113\.0\/24\s+web$/m);
  });

  it('--from and --to take tag: and group: references beside addresses; --name names the group', async () => {
    const r = await ctl([
      'sg', 'create', '--org', 'acme', '--name', 'db',
      '--allow', 'tcp:5432', '--from', 'tag:web,10.0.0.0/8', '--from', 'group:ops',
      '--egress-allow', 'any', '--to', 'group:db',
      '-o', 'json',
    ]);
    expect(r).toMatchObject({ code: 0, err: '' });
    expect(JSON.parse(server.requests.at(-1)!.body)).toEqual({
      name: 'db',
      inbound_rules: [{ ip_protocol: 'tcp', from_port: 5432, to_port: 5432, ip_ranges: ['10.0.0.0/8'], devices: ['tag:web', 'group:ops'] }],
      outbound_rules: [{ ip_protocol: 'any', from_port: 0, to_port: 0, ip_ranges: [], devices: ['group:db'] }],
    });
    const bad = await ctl(['sg', 'create', '--org', 'acme', '--allow', 'tcp:22', '--from', 'tag:Web']);
    expect(bad.code).toBe(2);
  });

  it('update with rule flags replaces only the side given; --data stays raw', async () => {
    const id = '22222222-2222-4222-8222-222222222222';
    server.put('security-group', { id, description: 'web', inbound_rules: [], outbound_rules: [] });
    expect((await ctl(['sg', 'update', 'web', '--org', 'acme', '--egress-allow', 'udp:53'])).code).toBe(0);
    expect(JSON.parse(server.requests.at(-1)!.body)).toEqual({ outbound_rules: [{ ip_protocol: 'udp', from_port: 53, to_port: 53, ip_ranges: [] }] });
    const raw = '{"inbound_rules":[{"ip_protocol":"tcp","from_port":1,"to_port":2,"ip_ranges":[]}]}';
    expect((await ctl(['sg', 'update', id, '--org', 'acme', '--data', raw])).code).toBe(0);
    expect(JSON.parse(server.requests.at(-1)!.body)).toEqual(JSON.parse(raw));
  });
});
