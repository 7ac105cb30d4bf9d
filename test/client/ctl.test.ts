import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCtl } from '../../src/cli/ctl/index.js';
import { FakeFleetServer } from './support/fake-fleet-server.js';
import { until } from './support/wait.js';

let server: FakeFleetServer;

beforeEach(async () => {
  server = await new FakeFleetServer().start();
});
afterEach(async () => {
  await server.close();
});

class Buffer {
  text = '';
  write(chunk: string): boolean {
    this.text += chunk;
    return true;
  }
}

async function ctl(argv: string[], opts: { env?: Record<string, string>; signal?: AbortSignal; stdout?: Buffer } = {}) {
  const stdout = opts.stdout ?? new Buffer();
  const stderr = new Buffer();
  const env = opts.env ?? { FLEETPLANE_URL: server.url, FLEETPLANE_TOKEN: server.token };
  const code = await runCtl(argv, { stdout, stderr, env, ...(opts.signal ? { signal: opts.signal } : {}) });
  return { code, out: stdout.text, err: stderr.text };
}

const device = (hostname: string) => ({ hostname, tunnel_ip: '100.64.0.2', status: { online: true, applied_revision: 1 } });

describe('fleetplane ctl', () => {
  it('lists devices as a table and as JSON', async () => {
    const a = server.put('device', { ...device('alpha'), id: 'dev-a' });
    const table = await ctl(['devices', 'list', '--org', server.org]);
    expect(table.code).toBe(0);
    expect(table.err).toBe('');
    const [header, row] = table.out.trimEnd().split('\n');
    expect(header).toMatch(/^ID\s+HOSTNAME\s+TUNNEL IP\s+ONLINE\s+APPLIED\s+REVISION$/);
    expect(row).toMatch(/^dev-a\s+alpha\s+100\.64\.0\.2\s+true\s+1\s+1$/);
    const json = await ctl(['devices', 'list', '--org', server.org, '--output', 'json']);
    expect(JSON.parse(json.out)).toEqual([a]);
  });

  it('flags win over the environment', async () => {
    const r = await ctl(['devices', 'list', '--org', server.org, '--server', server.url, '--token', server.token], {
      env: { FLEETPLANE_URL: 'http://127.0.0.1:1', FLEETPLANE_TOKEN: 'nope' },
    });
    expect(r.code).toBe(0);
  });

  it('creates, gets, updates with If-Match and deletes', async () => {
    const created = await ctl(['devices', 'create', '--org', server.org, '--hostname', 'h1', '--data', '{"public_key":"k","relay":true}', '-o', 'json']);
    expect(created.code).toBe(0);
    const dev = JSON.parse(created.out) as { id: string; revision: number; relay: boolean; hostname: string };
    expect(dev).toMatchObject({ hostname: 'h1', public_key: 'k', relay: true, device_token: 'fpd_secret' });

    const got = await ctl(['devices', 'get', dev.id, '--org', server.org]);
    expect(got.out).toMatch(/^hostname\s+h1$/m);

    const stale = await ctl(['devices', 'update', dev.id, '--org', server.org, '--hostname', 'h2', '--if-match', String(dev.revision + 7)]);
    expect(stale.code).toBe(1);
    expect(stale.err).toMatch(/^error: .*\(precondition_failed, HTTP 412\)\n$/);

    const ok = await ctl(['devices', 'update', dev.id, '--org', server.org, '--hostname', 'h2', '--if-match', String(dev.revision)]);
    expect(ok.code).toBe(0);
    expect(server.live.get('device')!.get(dev.id)?.['hostname']).toBe('h2');

    const del = await ctl(['devices', 'delete', dev.id, '--org', server.org]);
    expect(del).toMatchObject({ code: 0, out: `deleted device ${dev.id}\n` });
  });

  it('reads --data from a file', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'fp-ctl-'));
    await writeFile(join(dir, 'g.json'), JSON.stringify({ description: 'web', inbound_rules: [] }));
    const r = await ctl(['security-groups', 'create', '--org', server.org, '--data', `@${join(dir, 'g.json')}`, '-o', 'json']);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.out)).toMatchObject({ description: 'web' });
  });

  it('creates a token and a registration key, showing the secret once', async () => {
    const t = await ctl(['tokens', 'create', '--org', server.org, '--role', 'read', '--description', 'ci', '-o', 'json']);
    expect(JSON.parse(t.out)).toMatchObject({ role: 'read', token: 'fpt_secret' });
    const k = await ctl(['registration-keys', 'create', '--org', server.org, '--single-use']);
    expect(k.out).toMatch(/^key\s+fpr_secret$/m);
    expect(k.err).toContain('shown only this once');
    expect(JSON.parse(server.requests.at(-1)!.body)).toEqual({ single_use: true });
  });

  it('calls an agent method with params and wait', async () => {
    server.put('device', { id: 'd1', hostname: 'x' });
    const r = await ctl(['devices', 'rpc', 'd1', 'ping', '--org', server.org, '--params', '{"a":1}', '--wait', '3', '-o', 'json']);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.out)).toMatchObject({ pong: true, wait: '3' });
    const missing = await ctl(['devices', 'rpc', 'd1', 'status', '--org', server.org]);
    expect(missing.code).toBe(1);
    expect(missing.err).toMatch(/\(agent_not_connected, HTTP 504\)/);
  });

  it.each([
    [['devices', 'list'], /--org is required/],
    [['planets', 'list'], /unknown resource "planets"/],
    [['devices', 'fly', '--org', 'o'], /unknown verb "fly"/],
    [['devices', 'list', '--bogus'], /Unknown option '--bogus'/],
    [['devices', 'list', '--org', 'o', '-o', 'yaml'], /--output must be table or json/],
    [['devices', 'update', 'x', '--org', 'o', '--hostname', 'h', '--if-match', 'abc'], /--if-match must be a non-negative integer/],
    [['tokens', 'create', '--org', 'o', '--role', 'root'], /--role must be one of admin, read/],
    [['watch', '--org', 'o'], /at least one kind/],
    [['watch', 'planets', '--org', 'o'], /unknown kind "planets"/],
    [['devices', 'create', '--org', 'o', '--data', '{nope'], /--data is not valid JSON/],
  ])('usage error %j → exit 2 with one line', async (argv, message) => {
    const r = await ctl(argv);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(message);
    expect(r.err.trimEnd().split('\n')).toHaveLength(1);
    expect(r.out).toBe('');
  });

  it('needs a server and a token', async () => {
    expect(await ctl(['orgs', 'list'], { env: {} })).toMatchObject({ code: 2, err: expect.stringMatching(/no server/) });
    expect(await ctl(['orgs', 'list'], { env: { FLEETPLANE_URL: server.url } })).toMatchObject({ code: 2, err: expect.stringMatching(/no token/) });
  });

  it('reports API and network errors on one line with exit 1', async () => {
    const notFound = await ctl(['devices', 'get', 'nope', '--org', server.org]);
    expect(notFound).toMatchObject({ code: 1, err: 'error: device not found (not_found, HTTP 404)\n' });
    const denied = await ctl(['orgs', 'list', '--token', 'wrong']);
    expect(denied.code).toBe(1);
    expect(denied.err).toMatch(/\(unauthorized, HTTP 401\)\n$/);
    const down = await ctl(['orgs', 'list', '--server', 'http://127.0.0.1:1']);
    expect(down.code).toBe(1);
    expect(down.err).toMatch(/^error: GET \/api\/organizations: fetch failed.*\(network_error\)\n$/);
  });

  it('prints help with exit 0, and usage with exit 2 when given nothing', async () => {
    expect((await ctl(['--help'])).code).toBe(0);
    const none = await ctl([]);
    expect(none.code).toBe(2);
    expect(none.err).toContain('Usage: fleetplane ctl');
  });

  it('watches as NDJSON until interrupted, then exits 0', async () => {
    server.put('device', { id: 'd1', hostname: 'a', tunnel_ip: '100.64.0.2' });
    const ac = new AbortController();
    const stdout = new Buffer();
    const run = ctl(['watch', 'devices', 'security-groups', '--org', server.org, '-o', 'json'], { signal: ac.signal, stdout });
    await until(() => stdout.text.split('\n').length >= 4, 'list and tails');
    server.remove('device', 'd1');
    server.bookmark();
    await until(() => stdout.text.includes('bookmark'), 'bookmark');
    ac.abort();
    const r = await run;
    expect(r.code).toBe(0);
    const events = r.out.trimEnd().split('\n').map((l) => JSON.parse(l) as { type: string; kind?: string });
    expect(events.map((e) => `${e.kind ?? '-'}:${e.type}`)).toEqual([
      'device:change',
      'device:tail',
      'security-group:tail',
      'device:delete',
      '-:bookmark',
    ]);
    expect(server.watchRequests.at(-1)).toEqual([{ kind: 'device' }, { kind: 'security-group' }]);
  });

  it('watches in human form and fails with exit 1 on a server error event', async () => {
    server.put('device', { id: 'd1', hostname: 'alpha', tunnel_ip: '100.64.0.9' });
    const stdout = new Buffer();
    const run = ctl(['watch', 'device', '--org', server.org], { stdout });
    await until(() => stdout.text.includes('listed'), 'tail');
    server.bookmark();
    server.sendError('revision_compacted');
    const r = await run;
    expect(r.out).toMatch(/^\s+1 {2}device\s+changed {2}d1 {2}alpha 100\.64\.0\.9$/m);
    expect(r.out).toMatch(/^\s+1 {2}device\s+listed; following changes$/m);
    expect(r.out).not.toContain('bookmark');
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/^error: .*\(revision_compacted, HTTP 410\)\n$/);
  });
});
