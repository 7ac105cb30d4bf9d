import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeFleetServer } from './support/fake-fleet-server.js';
import { ago, ctlRunner, TextBuffer } from './support/ctl-runner.js';
import { until } from './support/wait.js';

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

const lines = (b: TextBuffer) => b.text.split('\n').filter((l) => l !== '');

/** Starts a ctl command that runs until aborted; `stop()` aborts it and returns its result. */
function background(argv: string[]) {
  const ac = new AbortController();
  const stdout = new TextBuffer();
  const stderr = new TextBuffer();
  const run = ctl(argv, { signal: ac.signal, stdout, stderr });
  return {
    stdout,
    stderr,
    stop: async () => {
      ac.abort();
      return run;
    },
    run,
  };
}

describe('fleetplane ctl <resource> list --watch', () => {
  it('prints the table with an EVENT column, then a line per change, resuming across broken connections', async () => {
    server.put('device', { id: 'dev-a', hostname: 'alpha', tunnel_ip: '100.64.0.2', public_key: 'k', endpoints: [] });
    const w = background(['devices', 'list', '--org', 'acme', '--watch']);
    await until(() => lines(w.stdout).length === 2, 'the table');
    expect(lines(w.stdout)[0]).toMatch(/^EVENT\s+ID\s+HOSTNAME\s+TUNNEL IP\s+ONLINE\s+LAST SEEN\s+APPLIED$/);
    expect(lines(w.stdout)[1]).toMatch(/^ADDED\s+dev-a\s+alpha\s+100\.64\.0\.2\s+-\s+-\s+-$/);

    server.put('device', { id: 'dev-a', hostname: 'alpha-2' });
    server.put('device', { id: 'dev-b', hostname: 'beta', tunnel_ip: '100.64.0.3', public_key: 'k', endpoints: [] });
    server.remove('device', 'dev-a');
    await until(() => lines(w.stdout).length === 5, 'three changes');
    expect(lines(w.stdout).slice(2).map((l) => l.split(/\s+/).slice(0, 3).join(' '))).toEqual([
      'MODIFIED dev-a alpha-2',
      'ADDED dev-b beta',
      'DELETED dev-a alpha-2',
    ]);

    // A broken connection: told on stderr, resumed from where it was, nothing printed twice.
    server.cutAll();
    await until(() => w.stderr.text.includes('reconnecting…'), 'the reconnecting line');
    await until(() => server.watchers.size === 1, 'the watch to come back');
    server.put('device', { id: 'dev-b', hostname: 'beta-2' });
    await until(() => lines(w.stdout).length === 6, 'the change after the reconnect');
    expect(lines(w.stdout)[5]).toMatch(/^MODIFIED\s+dev-b\s+beta-2\s/);
    expect(w.stderr.text).toMatch(/^reconnecting… \(next try in \d+\.\ds\): .+\nreconnected after \d+ attempts?, \d+\.\ds(; last: .+)?\n$/);
    expect(server.watchRequests.at(-1)).toEqual([{ kind: 'device', gt_revision: 5, at_tail: true, patches: true, gzip: true }]);

    const end = await w.stop();
    expect(end.code).toBe(0);
  });

  it('prints {type, object} lines as JSON', async () => {
    server.put('security-group', { id: 'sg-1', description: 'web', inbound_rules: [], outbound_rules: [] });
    const w = background(['sg', 'list', '--org', 'acme', '-w', '-o', 'json']);
    await until(() => lines(w.stdout).length === 1, 'the listing');
    server.put('security-group', { id: 'sg-1', description: 'www' });
    await until(() => lines(w.stdout).length === 2, 'the change');
    await w.stop();
    expect(lines(w.stdout).map((l) => JSON.parse(l) as { type: string; object: { description: string } }).map((e) => `${e.type} ${e.object.description}`)).toEqual([
      'ADDED web',
      'MODIFIED www',
    ]);
  });
});

describe('fleetplane ctl watch', () => {
  it('prints a header, then every object and change; survives cuts and compaction; Ctrl-C is exit 0', async () => {
    server.put('device', { id: 'd1', hostname: 'alpha', tunnel_ip: '100.64.0.9' });
    const w = background(['watch', 'device', 'sg', '--org', 'acme']);
    await until(() => lines(w.stdout).length === 2, 'header and listing');
    expect(lines(w.stdout)).toEqual([
      `EVENT     KIND            REVISION  ID${' '.repeat(36)}NAME`,
      `ADDED     device                 2  d1${' '.repeat(36)}alpha 100.64.0.9`,
    ]);

    server.put('security-group', { id: 'g1', description: 'web' });
    await until(() => lines(w.stdout).length === 3, 'the group');
    expect(lines(w.stdout)[2]).toBe(`ADDED     security-group         3  g1${' '.repeat(36)}web`);

    // The server forgot the deletes this watch would need: it lists again and prints only what differs.
    server.cutAll();
    server.remove('device', 'd1');
    server.put('device', { id: 'd2', hostname: 'beta', tunnel_ip: '100.64.0.10' });
    server.compact();
    await until(() => lines(w.stdout).length === 5, 'the differences after the relist', 20_000);
    expect(lines(w.stdout).slice(3).map((l) => l.split(/\s+/).slice(0, 2).concat(l.split(/\s+/).slice(3, 4)).join(' '))).toEqual([
      'ADDED device d2',
      'DELETED device d1',
    ]);
    expect(w.stderr.text).toContain('revision_compacted');

    const end = await w.stop();
    expect(end.code).toBe(0);
  });

  it('retries a refused watch until it is accepted, saying so on stderr', async () => {
    server.rejectWatches = 'unavailable';
    const w = background(['watch', 'devices', '--org', server.org, '-o', 'json']);
    await until(() => server.watchRequests.length >= 3, 'two retries');
    // One line for the whole outage, however many attempts it takes.
    expect(w.stderr.text).toMatch(/^reconnecting… \(next try in \d+\.\ds\): .*\(unavailable, HTTP 503\)\n$/);
    expect(w.stdout.text).toBe('');
    server.rejectWatches = undefined;
    server.put('device', { id: 'd1', hostname: 'late', tunnel_ip: '100.64.0.2' });
    await until(() => lines(w.stdout).length === 1, 'the device');
    expect(JSON.parse(lines(w.stdout)[0]!)).toMatchObject({ type: 'ADDED', kind: 'device', object: { id: 'd1', hostname: 'late' } });
    const attempts = /reconnected after (\d+) attempts, \d+\.\ds\n$/.exec(w.stderr.text)?.[1];
    expect(Number(attempts)).toBeGreaterThanOrEqual(3);
    expect(w.stderr.text.split('\n')).toHaveLength(3);
    expect((await w.stop()).code).toBe(0);
  });

  it('ends with exit 1 when the token is revoked', async () => {
    const w = background(['watch', 'devices', '--org', 'acme']);
    await until(() => server.watchers.size === 1, 'the watch');
    server.sendError('forbidden');
    const end = await w.run;
    expect(end.code).toBe(1);
    expect(end.err).toMatch(/^error: .*\(forbidden, HTTP 403\)\n$/);
  });
});

describe('fleetplane ctl status', () => {
  const value = {
    revision: 42,
    devices: 3,
    at_head: 1,
    behind: 0,
    error: 1,
    stale: 1,
    online: 2,
    not_converged: [
      { id: 'd2', hostname: 'web-2', applied_revision: 40, apply_error: 'nft: syntax\nerror', last_seen: ago(180) },
      { id: 'd3', hostname: 'db-1', applied_revision: null, apply_error: null, last_seen: null },
    ],
  };

  it('shows the head, the counts and the devices not converged with LAST SEEN', async () => {
    server.convergence.value = value;
    const r = await ctl(['status', '--org', 'acme']);
    expect(r).toEqual({
      code: 0,
      err: '',
      out: [
        `organization acme (${server.org}) at revision 42`,
        '',
        'DEVICES  AT HEAD  BEHIND  ERROR  STALE  ONLINE',
        '3        1        0       1      1      2',
        '',
        'not converged:',
        'HOSTNAME  ID  APPLIED  LAST SEEN  ERROR',
        'web-2     d2  40       3m         nft: syntax error',
        'db-1      d3  -        never      -',
        '',
      ].join('\n'),
    });
    // By id, the name is looked up for the header.
    expect((await ctl(['status', '--org', server.org])).out.split('\n')[0]).toBe(`organization acme (${server.org}) at revision 42`);
    expect(JSON.parse((await ctl(['status', '--org', 'acme', '-o', 'json'])).out)).toEqual(value);
  });

  it('--watch prints each new value, reconnecting by itself', async () => {
    server.convergence.value = { ...value, not_converged: [], error: 0, stale: 0, at_head: 3 };
    const w = background(['status', '--org', 'acme', '--watch', '-o', 'json']);
    await until(() => lines(w.stdout).length === 1, 'the first value');
    server.convergence.set({ revision: 43, at_head: 2, behind: 1 });
    await until(() => lines(w.stdout).length === 2, 'the change');
    server.convergence.cut();
    await until(() => lines(w.stdout).length === 3, 'the value after the reconnect');
    expect(w.stderr.text).toMatch(/^reconnecting… \(next try in \d+\.\ds\): .+\nreconnected after \d+ attempts?, \d+\.\ds(; last: .+)?\n$/);
    expect((await w.stop()).code).toBe(0);
    expect(lines(w.stdout).map((l) => (JSON.parse(l) as { revision: number }).revision)).toEqual([42, 43, 43]);
  });
});
