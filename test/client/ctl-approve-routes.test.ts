/**
 * `fleetplane ctl devices approve-routes` against the fake server: what it
 * writes (If-Match, a 412 read again), what it prints, its usage errors.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeFleetServer } from './support/fake-fleet-server.js';
import { ago, ctlRunner } from './support/ctl-runner.js';

let server: FakeFleetServer;
const ctl = ctlRunner(() => server);

beforeEach(async () => {
  server = await new FakeFleetServer().start();
  server.put('organization', { id: server.org, name: 'acme', description: '', network: { ipv4_cidr: '100.64.0.0/16', mtu: 1420, resolvers: [], routes: [] } });
});
afterEach(async () => {
  await server.close();
});

const device = (hostname: string) => ({
  hostname,
  tunnel_ip: '100.64.0.2',
  public_key: 'k',
  advertise_cidrs: [],
  approved_cidrs: [],
  endpoints: [],
  security_group_id: null,
  status: { online: true, last_seen: ago(5), applied_revision: 1, apply_error: null, local_endpoints: [], os: null, agent_version: '0.1.0' },
});

describe('fleetplane ctl devices approve-routes', () => {
  it('adds CIDRS, or with --all the requested routes, to the approved ones with If-Match, and prints what stays unapproved', async () => {
    server.put('device', { ...device('router-1'), id: 'dev-1', advertise_cidrs: ['10.20.0.0/16', '10.30.0.0/16', 'fd00:20::/48'], approved_cidrs: ['10.30.0.0/16'] });
    const patches = (from: number) => server.requests.slice(from).filter((r) => r.method === 'PATCH');
    let from = server.requests.length;
    const some = await ctl(['devices', 'approve-routes', 'router-1', '10.20.0.0/16, FD00:20::/48', '--org', 'acme']);
    expect(some).toEqual({
      code: 0,
      out: 'approved routes of device router-1 (dev-1): 10.30.0.0/16, 10.20.0.0/16, fd00:20::/48\nrequested, not approved: none\n',
      err: '',
    });
    const [patch] = patches(from);
    expect(JSON.parse(patch!.body)).toEqual({ approved_cidrs: ['10.30.0.0/16', '10.20.0.0/16', 'fd00:20::/48'] });
    expect(patch!.headers['if-match']).toBe(`"${server.live.get('device')!.get('dev-1')!.revision - 1}"`);

    // Nothing new to approve: no write, and the same report.
    from = server.requests.length;
    const again = await ctl(['devices', 'approve-routes', 'router-1', '10.20.0.0/16', '--org', 'acme', '-o', 'json']);
    expect(again.code).toBe(0);
    expect(JSON.parse(again.out)).toMatchObject({ id: 'dev-1', approved_cidrs: ['10.30.0.0/16', '10.20.0.0/16', 'fd00:20::/48'], unapproved_cidrs: [] });
    expect(patches(from)).toEqual([]);

    // --all approves what is requested now; a write that comes between its read and its write (412) is read again and kept.
    server.put('device', { id: 'dev-1', advertise_cidrs: ['10.20.0.0/16', '10.40.0.0/16'], approved_cidrs: ['10.20.0.0/16'] });
    let raced = false;
    server.onRequest = ({ method }) => {
      if (method !== 'PATCH' || raced) return;
      raced = true;
      server.put('device', { id: 'dev-1', advertise_cidrs: ['10.20.0.0/16', '10.40.0.0/16', '10.50.0.0/16'] });
    };
    from = server.requests.length;
    const all = await ctl(['devices', 'approve-routes', 'router-1', '--all', '--org', 'acme']);
    expect(all).toMatchObject({ code: 0, out: 'approved routes of device router-1 (dev-1): 10.20.0.0/16, 10.40.0.0/16, 10.50.0.0/16\nrequested, not approved: none\n' });
    expect(patches(from).map((p) => JSON.parse(p.body) as unknown)).toEqual([
      { approved_cidrs: ['10.20.0.0/16', '10.40.0.0/16'] },
      { approved_cidrs: ['10.20.0.0/16', '10.40.0.0/16', '10.50.0.0/16'] },
    ]);
    expect(server.live.get('device')!.get('dev-1')!['approved_cidrs']).toEqual(['10.20.0.0/16', '10.40.0.0/16', '10.50.0.0/16']);

    // A device that keeps changing: the last 412 is reported, exit 1.
    server.onRequest = ({ method }) => {
      if (method === 'PATCH') server.put('device', { id: 'dev-1', hostname: 'router-1' });
    };
    server.put('device', { id: 'dev-1', advertise_cidrs: ['10.60.0.0/16'] });
    const busy = await ctl(['devices', 'approve-routes', 'router-1', '--all', '--org', 'acme']);
    expect(busy.code).toBe(1);
    expect(busy.err).toMatch(/\(precondition_failed, HTTP 412\)\n$/);
    server.onRequest = undefined;
  });

  it.each([
    [['devices', 'approve-routes', 'r1', '--org', 'acme'], 'fleetplane ctl devices approve-routes: missing CIDRS (comma separated routes), or --all to approve every route the device requests (see --help)'],
    [['devices', 'approve-routes', 'r1', '10.20.0.0/16', '--all', '--org', 'acme'], 'fleetplane ctl devices approve-routes: give CIDRS or --all, not both (see --help)'],
    [['devices', 'approve-routes', 'r1', '10.20.0.1/16', '--org', 'acme'], 'fleetplane ctl devices approve-routes: 10.20.0.1/16 has host bits set; expected 10.20.0.0/16 (see --help)'],
    [['devices', 'approve-routes', 'r1', '10.20.0.0/33', '--org', 'acme'], 'fleetplane ctl devices approve-routes: "10.20.0.0/33" is not a CIDR (e.g. 10.20.0.0/16) (see --help)'],
  ])('usage error %j → exit 2, one line, nothing asked of the server', async (argv, message) => {
    const before = server.requests.length;
    expect(await ctl(argv)).toEqual({ code: 2, out: '', err: `${message}\n` });
    expect(server.requests.length).toBe(before);
  });
});
