import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { FleetplaneClient, type CreatedOrgToken, type CreatedRegistrationKey, type Device, type Organization } from '../../src/client/index.js';
import { packageVersion } from '../../src/cli/version.js';
import { expectedVersionLine } from '../support/version-line.js';
import { buildDist, fleetplane, type Run } from '../support/fleetplane-process.js';
import { ADMIN_TOKEN, startRealServer, uniqueName, until, wgKey, type RealServer } from './support/real-server.js';
import { scratchDir } from '../support/scratch-dir.js';

let rs: RealServer;

/** A config path nobody wrote: no test reads the real ~/.config. */
const freshConfig = (): string => join(scratchDir('ctl-e2e'), 'config.json');

/** `fleetplane ctl ...args`; the server URL and admin token come from the environment unless `env` says otherwise. */
function ctl(args: readonly string[], env: Record<string, string | undefined> = {}): Run {
  return fleetplane(['ctl', ...args], { FLEETPLANE_URL: rs.url, FLEETPLANE_TOKEN: ADMIN_TOKEN, FLEETPLANE_CONFIG: freshConfig(), ...env });
}

/** Runs to the end (async: the server runs in this process, a sync spawn would block it). */
function run(args: readonly string[], env?: Record<string, string | undefined>) {
  return ctl(args, env).exit;
}

function json<T>(text: string): T {
  return JSON.parse(text) as T;
}

beforeAll(async () => {
  await buildDist();
  rs = await startRealServer({ bookmarkInterval: 0.2 });
}, 180_000);
afterAll(async () => {
  await rs?.close();
});

describe('fleetplane ctl as a real process against a real server', () => {
  it('orgs create and list, as tables and as JSON', async () => {
    const name = uniqueName('ctl-org');
    // Independent commands run at once: a process start costs seconds under load.
    const [created, asJson] = await Promise.all([
      run(['orgs', 'create', '--name', name, '--description', 'from ctl']),
      run(['orgs', 'create', '--name', `${name}-json`, '--output', 'json']),
    ]);
    expect(created).toMatchObject({ code: 0 });
    // The admin token named no owner: the owner invitation's token is printed, and said to be shown once.
    expect(created.stderr).toMatch(/^note: the owner invitation token .* is shown only this once; store it now\n$/);
    expect(created.stdout).toMatch(/^id: +[0-9a-f-]{36}\nname: +/);
    expect(created.stdout).toMatch(new RegExp(`^name: +${name}$`, 'm'));

    expect(asJson.code).toBe(0);
    const { owner_invitation: invitation, ...org } = json<Organization & { owner_invitation?: { token?: string } }>(asJson.stdout);
    expect(invitation?.token).toMatch(/^fpi_/);
    expect(await rs.admin.organizations.get(org.id)).toEqual(org);

    const [table, flagged] = await Promise.all([
      run(['orgs', 'list']),
      run(['orgs', 'list', '-o', 'json', '--server', rs.url, '--token', ADMIN_TOKEN], { FLEETPLANE_URL: undefined, FLEETPLANE_TOKEN: undefined }),
    ]);
    expect(table.code).toBe(0);
    const lines = table.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^ID\s+NAME\s+CIDR\s+MTU\s+DESCRIPTION$/);
    expect(lines.find((l) => l.startsWith(org.id))).toMatch(new RegExp(`^${org.id}\\s+${name}-json\\s+100\\.64\\.0\\.0/16\\s+1420\\s+-$`));
    expect(lines.some((l) => new RegExp(`\\s${name}\\s.*from ctl$`).test(l))).toBe(true);

    expect(flagged.code).toBe(0);
    expect(json<Organization[]>(flagged.stdout)).toEqual((await rs.admin.organizations.list()).items);
  });

  it('names instead of ids: --org NAME, devices by hostname, an ambiguous hostname listing the ids', async () => {
    const name = uniqueName('ctl-names');
    const org = (await rs.admin.organizations.create({ name })).id;
    const web = await rs.admin.devices.create(org, { hostname: 'web-1', public_key: wgKey() });
    const [table, got, group, unknown] = await Promise.all([
      run(['devices', 'list', '--org', name]),
      run(['devices', 'get', 'web-1', '--org', name, '-o', 'yaml']),
      run(['sg', 'create', '--org', name, '--description', 'web', '--allow', 'tcp:22', '--from', '10.0.0.0/8', '--allow', 'icmp', '--egress-allow', 'any', '-o', 'json']),
      run(['devices', 'list', '--org', `${name}-nope`]),
    ]);
    expect(table).toMatchObject({ code: 0, stderr: '' });
    expect(table.stdout).toMatch(/^ID\s+HOSTNAME\s+TUNNEL IP\s+ONLINE\s+LAST SEEN\s+APPLIED\n/);
    expect(table.stdout).toMatch(new RegExp(`^${web.id}\\s+web-1\\s+100\\.64\\.0\\.1\\s+false\\s+never\\s+-$`, 'm'));

    // -o yaml is the REST object.
    expect(got.code).toBe(0);
    expect(got.stdout).toMatch(new RegExp(`^id: ${web.id}$`, 'm'));
    expect(parseYaml(got.stdout)).toEqual(await rs.admin.devices.get(org, web.id));

    expect(group.code).toBe(0);
    const sg = json<{ id: string }>(group.stdout);
    expect((await rs.admin.securityGroups.get(org, sg.id)).inbound_rules).toEqual([
      { ip_protocol: 'tcp', from_port: 22, to_port: 22, ip_ranges: ['10.0.0.0/8'] },
      { ip_protocol: 'icmp', from_port: 0, to_port: 0, ip_ranges: [] },
    ]);
    expect((await run(['devices', 'update', 'web-1', '--org', name, '--security-group', 'web'])).code).toBe(0);
    expect((await rs.admin.devices.get(org, web.id)).security_group_id).toBe(sg.id);

    const twin = await rs.admin.devices.create(org, { hostname: 'web-1', public_key: wgKey() });
    const ambiguous = await run(['devices', 'get', 'web-1', '--org', name]);
    expect(ambiguous).toMatchObject({ code: 1, stdout: '' });
    expect(ambiguous.stderr).toBe(`error: "web-1" is ambiguous: 2 devices in organization ${name} have that name (${web.id}, ${twin.id}); use an id instead\n`);
    const byId = await run(['devices', 'delete', twin.id, '--org', name]);
    expect(byId).toMatchObject({ code: 0, stdout: `deleted device ${twin.id}\n` });
    expect([unknown.code, unknown.stderr]).toEqual([1, `error: no organization named "${name}-nope"\n`]);
  });

  it('contexts: set-context writes a 0600 file, and commands need neither environment nor flags', async () => {
    const name = uniqueName('ctl-ctx');
    const org = (await rs.admin.organizations.create({ name })).id;
    const d = await rs.admin.devices.create(org, { hostname: 'in-context', public_key: wgKey() });
    const config = freshConfig();
    const noEnv = { FLEETPLANE_URL: undefined, FLEETPLANE_TOKEN: undefined, FLEETPLANE_CONFIG: config };
    const set = await run(['config', 'set-context', 'e2e', '--server', rs.url, '--token', ADMIN_TOKEN, '--org', name], noEnv);
    expect(set).toMatchObject({ code: 0, stderr: '', stdout: `context "e2e" added in ${config} (now the current context)\n` });
    expect((await stat(config)).mode & 0o777).toBe(0o600);
    expect(JSON.parse(await readFile(config, 'utf8'))).toEqual({ 'current-context': 'e2e', contexts: { e2e: { server: rs.url, token: ADMIN_TOKEN, org: name } } });

    const [listed, contexts, envToken] = await Promise.all([
      run(['devices', 'list', '-o', 'json'], noEnv),
      run(['config', 'get-contexts'], noEnv),
      run(['devices', 'list'], { ...noEnv, FLEETPLANE_TOKEN: 'fpt_not_a_token' }),
    ]);
    expect(listed).toMatchObject({ code: 0, stderr: '' });
    expect(json<Device[]>(listed.stdout).map((x) => x.id)).toEqual([d.id]);
    expect(contexts.stdout).toMatch(new RegExp(`^\\*\\s+e2e\\s+${rs.url}\\s+${name}\\s+-$`, 'm'));
    expect(contexts.stdout).not.toContain(ADMIN_TOKEN);
    // The environment beats the context: a bad token from it is used, and refused.
    expect([envToken.code, envToken.stderr]).toEqual([1, expect.stringMatching(/\(unauthorized, HTTP 401\)\n$/)]);
  });

  it('status: the head, the counts and the devices not converged, as a table and as YAML', async () => {
    const name = uniqueName('ctl-status');
    const org = (await rs.admin.organizations.create({ name })).id;
    const good = await rs.admin.devices.create(org, { hostname: 'good', public_key: wgKey() });
    const bad = await rs.admin.devices.create(org, { hostname: 'bad', public_key: wgKey() });
    await rs.admin.devices.create(org, { hostname: 'silent', public_key: wgKey() });
    const head = (await rs.admin.devices.list(org)).revision ?? 0;
    const report = (token: string, id: string, applyError: string | null) =>
      new FleetplaneClient({ baseUrl: rs.url, token }).devices.putStatus(org, id, {
        online: true,
        applied_revision: head,
        apply_error: applyError,
        local_endpoints: [],
        os: 'linux',
        agent_version: '0.1.0',
      });
    await report(good.device_token, good.id, null);
    await report(bad.device_token, bad.id, 'nft: syntax error');

    const [table, yaml] = await Promise.all([run(['status', '--org', name]), run(['status', '--org', name, '-o', 'yaml'])]);
    expect(table).toMatchObject({ code: 0, stderr: '' });
    const lines = table.stdout.split('\n');
    expect(lines.slice(0, 4)).toEqual([
      `organization ${name} (${org}) at revision ${head}`,
      '',
      expect.stringMatching(/^DEVICES\s+AT HEAD\s+BEHIND\s+ERROR\s+STALE\s+ONLINE$/),
      expect.stringMatching(/^3\s+1\s+0\s+1\s+1\s+\d+$/),
    ]);
    expect(lines).toContain('not converged:');
    expect(table.stdout).toMatch(new RegExp(`^bad\\s+${bad.id}\\s+${head}\\s+\\d+s\\s+nft: syntax error$`, 'm'));
    expect(table.stdout).toMatch(/^silent\s+\S+\s+-\s+never\s+-$/m);

    expect(parseYaml(yaml.stdout)).toMatchObject({ revision: head, devices: 3, at_head: 1, error: 1, stale: 1 });
  });

  it('devices list, tokens create and registration-keys create', async () => {
    const org = (await rs.admin.organizations.create({ name: uniqueName('ctl-dev') })).id;
    const d = await rs.admin.devices.create(org, { hostname: 'ctl-host', public_key: wgKey() });

    const [token, tableToken, key] = await Promise.all([
      run(['tokens', 'create', '--org', org, '--role', 'read', '--description', 'ci', '-o', 'json']),
      run(['token', 'create', '--org', org, '--role', 'admin']),
      run(['registration-keys', 'create', '--org', org, '--single-use', '-o', 'json']),
    ]);
    expect(token).toMatchObject({ code: 0, stderr: '' });
    const created = json<CreatedOrgToken>(token.stdout);
    expect(created).toMatchObject({ role: 'read', description: 'ci', organization_id: org });
    // The printed token works, with its role.
    const reader = new FleetplaneClient({ baseUrl: rs.url, token: created.token });
    expect((await reader.devices.list(org)).items.map((x) => x.id)).toEqual([d.id]);
    expect(tableToken.code).toBe(0);
    expect(tableToken.stdout).toMatch(/^token: +fpt_\S+$/m);
    expect(tableToken.stderr).toMatch(/shown only this once/);
    // Revoked by its description.
    expect(await run(['tokens', 'delete', 'ci', '--org', org])).toMatchObject({ code: 0, stdout: `revoked token ci (${created.id})\n` });

    expect(key.code).toBe(0);
    const k = json<CreatedRegistrationKey>(key.stdout);
    expect(k).toMatchObject({ single_use: true, used: false });
    const enrolled = await rs.admin.devices.enroll(org, k.key, { hostname: 'via-key', public_key: wgKey() });
    expect(enrolled.device_token).toMatch(/^fpd_/);
  });

  it('watch --output json prints one {type, kind, object} line per change until interrupted', async () => {
    const name = uniqueName('ctl-watch');
    const org = (await rs.admin.organizations.create({ name })).id;
    const before = await rs.admin.devices.create(org, { hostname: 'before', public_key: wgKey() });
    const w = ctl(['watch', 'device', '--org', name, '--output', 'json']);
    const events = () => w.out.stdout.split('\n').filter((l) => l !== '').map((l) => json<{ type: string; kind: string; object: { id: string; hostname: string } }>(l));
    try {
      await until(() => events().length === 1, 'the listed device', 20_000);
      const after = await rs.admin.devices.create(org, { hostname: 'after', public_key: wgKey() });
      await rs.admin.devices.delete(org, before.id);
      await until(() => events().length === 3, 'the changes', 20_000);
      expect(events().map((e) => `${e.type} ${e.kind} ${e.object.hostname}`)).toEqual(['ADDED device before', 'ADDED device after', 'DELETED device before']);
      expect(events()[1]?.object.id).toBe(after.id);
    } finally {
      w.child.kill('SIGINT');
    }
    const end = await w.exit;
    // Interrupted by the user: a clean end.
    expect([end.code, end.stderr]).toEqual([0, '']);
  });

  it('exit codes: 2 for usage, 1 for the server and the network, 0 for help and version', async () => {
    // None depends on another: all start at once, and are checked in order.
    const versionArgs = [['--version'], ['ctl', '--version'], ['agent', '--version'], ['serve', '--version'], ['sync', '--version']];
    const versions = Promise.all(versionArgs.map((args) => fleetplane(args, {}).exit));
    const [flag, resource, missing, noServer, badToken, down, help, completion, tcsh] = await Promise.all([
      run(['devices', 'list', '--no-such-flag']),
      run(['gadgets', 'list']),
      run(['devices', 'get', '--org', 'acme']),
      run(['orgs', 'list'], { FLEETPLANE_URL: undefined, FLEETPLANE_TOKEN: undefined }),
      run(['orgs', 'list'], { FLEETPLANE_TOKEN: 'fpt_not_a_token' }),
      run(['orgs', 'list', '--server', 'http://127.0.0.1:1']),
      run(['sg', 'create', '--help']),
      fleetplane(['completion', 'bash'], {}).exit,
      fleetplane(['completion', 'tcsh'], {}).exit,
    ]);
    expect([flag.code, flag.stdout, flag.stderr]).toEqual([2, '', 'fleetplane ctl devices list: unknown flag --no-such-flag (see --help)\n']);
    expect([resource.code, resource.stderr]).toEqual([2, 'fleetplane ctl: unknown command or resource "gadgets" (see --help)\n']);
    expect([missing.code, missing.stderr]).toEqual([2, 'fleetplane ctl devices get: missing <device> (see --help)\n']);
    expect(noServer.code).toBe(2);

    expect([badToken.code, badToken.stdout]).toEqual([1, '']);
    expect(badToken.stderr).toMatch(/^error: .+ \(unauthorized, HTTP 401\)\n$/);
    expect([down.code, down.stderr]).toEqual([1, expect.stringMatching(/^error: GET \/api\/organizations: fetch failed.*\(network_error\)\n$/)]);

    expect([help.code, help.stderr]).toEqual([0, '']);
    expect(help.stdout).toContain('--allow PROTO[:PORTS]');
    for (const version of await versions) expect([version.code, version.stdout]).toEqual([0, expectedVersionLine()]);
    expect([completion.code, completion.stdout]).toEqual([0, expect.stringContaining('complete -F _fleetplane fleetplane')]);
    expect(tcsh.code).toBe(2);
  });
});

describe('fleetplane ctl watch across a server restart', () => {
  it('keeps running while the server is down, says it is reconnecting, and prints what changed after', async () => {
    const dataDir = scratchDir('fp-ctl-restart');
    let server = await startRealServer({ memory: false, dataDir, port: 0 });
    const port = Number(new URL(server.url).port);
    const name = uniqueName('ctl-restart');
    const org = (await server.admin.organizations.create({ name })).id;
    const first = await server.admin.devices.create(org, { hostname: 'first', public_key: wgKey() });
    const w = fleetplane(['ctl', 'watch', 'devices', '--org', name], {
      FLEETPLANE_URL: server.url,
      FLEETPLANE_TOKEN: ADMIN_TOKEN,
      FLEETPLANE_CONFIG: freshConfig(),
    });
    const rows = () => w.out.stdout.split('\n').filter((l) => l !== '');
    try {
      await until(() => rows().length === 2, 'the header and the listed device', 20_000);
      expect(rows()[0]).toMatch(/^EVENT\s+KIND\s+REVISION\s+ID\s+NAME$/);
      expect(rows()[1]).toMatch(new RegExp(`^ADDED\\s+device\\s+${first.revision}\\s+${first.id}\\s+first 100\\.64\\.0\\.1$`));

      await server.close();
      await until(() => w.out.stderr.includes('reconnecting…'), 'the reconnecting line', 20_000);
      expect(w.child.exitCode).toBe(null);
      server = await startRealServer({ memory: false, dataDir, port });
      const second = await server.admin.devices.create(org, { hostname: 'second', public_key: wgKey() });
      await until(() => rows().length === 3, 'the device created after the restart', 30_000);
      expect(rows()[2]).toMatch(new RegExp(`^ADDED\\s+device\\s+${second.revision}\\s+${second.id}\\s+second `));
      await until(() => w.out.stderr.includes('reconnected after'), 'the reconnected line', 20_000);
      // One line when the outage starts and one when it ends, however many attempts it took.
      expect(w.out.stderr).toMatch(/^reconnecting… \(next try in \d+\.\ds\): .+\nreconnected after \d+ attempts?, \d+\.\ds(; last: .+)?\n$/);
    } finally {
      w.child.kill('SIGINT');
      await server.close();
    }
    const end = await w.exit;
    expect(end.code).toBe(0);
    // Nothing was printed twice: the watch resumed where it was.
    expect(end.stdout.split('\n').filter((l) => l.startsWith('ADDED')).length).toBe(2);
  }, 120_000);
});
