import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { chmod, mkdtemp, readFile, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeFleetServer } from './support/fake-fleet-server.js';
import { ctlRunner, freshConfigPath } from './support/ctl-runner.js';

let server: FakeFleetServer;
let other: FakeFleetServer;
const ctl = ctlRunner(() => server);
const NETWORK = { ipv4_cidr: '100.64.0.0/16', mtu: 1420, resolvers: [], routes: [] };

beforeEach(async () => {
  server = await new FakeFleetServer().start();
  other = await new FakeFleetServer().start();
  other.token = 'other-token';
  for (const s of [server, other]) s.put('organization', { id: s.org, name: 'acme', description: '', network: NETWORK });
  server.put('device', { id: 'dev-main', hostname: 'on-main', tunnel_ip: '100.64.0.2', endpoints: [] });
  other.put('device', { id: 'dev-other', hostname: 'on-other', tunnel_ip: '100.64.0.3', endpoints: [] });
});
afterEach(async () => {
  await server.close();
  await other.close();
});

/** The bearer tokens the server saw since `from`. */
const tokensSeen = (s: FakeFleetServer, from: number) => s.requests.slice(from).map((r) => r.headers.authorization);

describe('fleetplane ctl config: contexts', () => {
  it('set-context writes a 0600 file; the first context becomes current; commands then need no flags', async () => {
    const path = freshConfigPath();
    const env = { FLEETPLANE_CONFIG: path };
    const set = await ctl(['config', 'set-context', 'prod', '--server', server.url, '--token', server.token, '--org', 'acme'], { env });
    expect(set).toEqual({ code: 0, out: `context "prod" added in ${path} (now the current context)\n`, err: '' });
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    expect(JSON.parse(await readFile(path, 'utf8'))).toEqual({
      'current-context': 'prod',
      contexts: { prod: { server: server.url, token: server.token, org: 'acme' } },
    });

    const list = await ctl(['devices', 'list'], { env });
    expect(list).toMatchObject({ code: 0, err: '' });
    expect(list.out).toMatch(/^dev-main\s+on-main\s/m);
    expect(await ctl(['config', 'current-context'], { env })).toEqual({ code: 0, out: 'prod\n', err: '' });
  });

  it('get-contexts marks the current one and never shows tokens; use-context and delete-context', async () => {
    const env = { FLEETPLANE_CONFIG: freshConfigPath() };
    other.token = 'secret-lab';
    await ctl(['config', 'set-context', 'prod', '--server', server.url, '--token', 'secret-prod'], { env });
    await ctl(['config', 'set-context', 'lab', '--server', other.url, '--token', 'secret-lab', '--org', 'acme'], { env });
    const table = await ctl(['config', 'get-contexts'], { env });
    expect(table.out.split('\n').slice(0, 3)).toEqual([
      expect.stringMatching(/^CURRENT\s+NAME\s+SERVER\s+ORG\s+CA FILE$/),
      expect.stringMatching(new RegExp(`^\\*\\s+prod\\s+${server.url}\\s+-\\s+-$`)),
      expect.stringMatching(new RegExp(`^\\s+lab\\s+${other.url}\\s+acme\\s+-$`)),
    ]);
    expect(table.out).not.toContain('secret');
    const json = await ctl(['config', 'get-contexts', '-o', 'json'], { env });
    expect(json.out).not.toContain('secret');
    expect(JSON.parse(json.out)).toEqual([
      { current: true, name: 'prod', server: server.url },
      { current: false, name: 'lab', server: other.url, org: 'acme' },
    ]);

    expect(await ctl(['config', 'use-context', 'lab'], { env })).toMatchObject({ code: 0, out: 'switched to context "lab"\n' });
    expect((await ctl(['config', 'current-context'], { env })).out).toBe('lab\n');
    expect((await ctl(['devices', 'list', '-o', 'json'], { env })).out).toContain('dev-other');

    // Changing one field keeps the others.
    await ctl(['config', 'set-context', 'lab', '--org', ''], { env });
    const [, , labRow] = (await ctl(['config', 'get-contexts'], { env })).out.split('\n');
    expect(labRow).toMatch(new RegExp(`^\\*\\s+lab\\s+${other.url}\\s+-\\s+-$`));

    expect(await ctl(['config', 'delete-context', 'lab'], { env })).toMatchObject({ code: 0, out: 'deleted context "lab"\n' });
    expect(await ctl(['config', 'current-context'], { env })).toMatchObject({ code: 1, err: expect.stringMatching(/^error: no current context in /) });
    expect(await ctl(['config', 'use-context', 'lab'], { env })).toMatchObject({ code: 1, err: expect.stringMatching(/^error: no context "lab" in /) });
    expect(await ctl(['config', 'set-context', 'new'], { env })).toMatchObject({ code: 2, err: 'fleetplane ctl config set-context: a new context needs --server (see --help)\n' });
  });

  it('flags beat the environment, which beats the context', async () => {
    const env = { FLEETPLANE_CONFIG: freshConfigPath() };
    await ctl(['config', 'set-context', 'prod', '--server', server.url, '--token', server.token, '--org', 'acme'], { env });

    let from = server.requests.length;
    const envToken = await ctl(['devices', 'list'], { env: { ...env, FLEETPLANE_TOKEN: 'from-env' } });
    expect(envToken.err).toMatch(/\(unauthorized, HTTP 401\)/);
    expect(tokensSeen(server, from)).toEqual(['Bearer from-env']);

    from = server.requests.length;
    await ctl(['devices', 'list', '--token', 'from-flag'], { env: { ...env, FLEETPLANE_TOKEN: 'from-env' } });
    expect(tokensSeen(server, from)).toEqual(['Bearer from-flag']);

    // --org beats the context's organization; an id needs no lookup.
    from = server.requests.length;
    const byFlag = await ctl(['devices', 'list', '--org', server.org], { env });
    expect(byFlag.code).toBe(0);
    expect(server.requests.slice(from).map((r) => r.url)).toEqual([`/api/organizations/${server.org}/devices`]);

    // The environment's server with its own token: the context's org and token stay with the context's server.
    const otherFrom = other.requests.length;
    const viaEnv = await ctl(['devices', 'list', '--org', 'acme'], { env: { ...env, FLEETPLANE_URL: other.url, FLEETPLANE_TOKEN: other.token } });
    expect(viaEnv.out).toMatch(/^dev-other\s/m);
    expect(tokensSeen(other, otherFrom).every((t) => t === `Bearer ${other.token}`)).toBe(true);
  });

  it("never sends a context's token to another server", async () => {
    const env = { FLEETPLANE_CONFIG: freshConfigPath() };
    await ctl(['config', 'set-context', 'prod', '--server', server.url, '--token', server.token, '--org', 'acme'], { env });
    const from = other.requests.length;
    const r = await ctl(['devices', 'list'], { env: { ...env, FLEETPLANE_URL: other.url } });
    expect(r).toEqual({
      code: 2,
      out: '',
      err: `fleetplane ctl devices list: no token for ${other.url}: pass --token or set FLEETPLANE_TOKEN (context "prod" is for ${server.url}) (see --help)\n`,
    });
    expect(other.requests.length).toBe(from);
  });

  it('--context picks another context for one command', async () => {
    const env = { FLEETPLANE_CONFIG: freshConfigPath() };
    await ctl(['config', 'set-context', 'prod', '--server', server.url, '--token', server.token, '--org', 'acme'], { env });
    await ctl(['config', 'set-context', 'lab', '--server', other.url, '--token', other.token, '--org', 'acme'], { env });
    expect((await ctl(['devices', 'list', '-o', 'json'], { env })).out).toContain('dev-main');
    expect((await ctl(['devices', 'list', '-o', 'json', '--context', 'lab'], { env })).out).toContain('dev-other');
    expect(await ctl(['devices', 'list', '--context', 'nope'], { env })).toMatchObject({ code: 2, err: expect.stringMatching(/--context nope: no such context in /) });
  });

  it('finds the file by --config, FLEETPLANE_CONFIG, XDG_CONFIG_HOME, then HOME', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'fp-xdg-'));
    const args = ['config', 'set-context', 'x', '--server', server.url, '--token', server.token];
    await ctl(args, { env: { XDG_CONFIG_HOME: join(dir, 'xdg'), HOME: join(dir, 'home') } });
    expect(JSON.parse(await readFile(join(dir, 'xdg', 'fleetplane', 'config.json'), 'utf8'))).toMatchObject({ 'current-context': 'x' });
    // A relative XDG_CONFIG_HOME is ignored, as the XDG spec says.
    await ctl(args, { env: { XDG_CONFIG_HOME: 'relative', HOME: join(dir, 'home') } });
    expect(JSON.parse(await readFile(join(dir, 'home', '.config', 'fleetplane', 'config.json'), 'utf8'))).toMatchObject({ 'current-context': 'x' });
    await ctl(args, { env: { FLEETPLANE_CONFIG: join(dir, 'env.json'), XDG_CONFIG_HOME: join(dir, 'unused') } });
    await ctl([...args, '--config', join(dir, 'flag.json')], { env: { FLEETPLANE_CONFIG: join(dir, 'unused.json') } });
    for (const f of ['env.json', 'flag.json']) expect(JSON.parse(await readFile(join(dir, f), 'utf8'))).toMatchObject({ 'current-context': 'x' });
    await expect(stat(join(dir, 'unused'))).rejects.toThrow();
    await expect(stat(join(dir, 'unused.json'))).rejects.toThrow();
  });

  it('keeps --ca-file as an absolute path', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'fp-cwd-'));
    const path = freshConfigPath();
    await ctl(['config', 'set-context', 'tls', '--server', 'https://fleet.example.com', '--token', 't', '--ca-file', 'ca.pem'], { env: { FLEETPLANE_CONFIG: path }, cwd: dir });
    expect(JSON.parse(await readFile(path, 'utf8')).contexts.tls['ca-file']).toBe(join(dir, 'ca.pem'));
  });

  it('a malformed file is exit 1 naming it; a file others can read gets a warning', async () => {
    const path = freshConfigPath();
    await writeFile(path, '{"contexts": ');
    const broken = await ctl(['devices', 'list'], { env: { FLEETPLANE_CONFIG: path } });
    expect(broken).toMatchObject({ code: 1, err: expect.stringMatching(new RegExp(`^error: ${path} is not valid JSON`)) });

    await writeFile(path, JSON.stringify({ 'current-context': 'p', contexts: { p: { server: server.url, token: server.token, org: 'acme' } } }));
    await chmod(path, 0o644);
    const loose = await ctl(['devices', 'list'], { env: { FLEETPLANE_CONFIG: path } });
    expect(loose.code).toBe(0);
    expect(loose.err).toBe(`warning: ${path} is readable by others (mode 0644); run: chmod 600 ${path}\n`);
  });
});
