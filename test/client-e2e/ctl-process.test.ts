import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FleetplaneClient, type CreatedOrgToken, type CreatedRegistrationKey, type Organization } from '../../src/client/index.js';
import { ADMIN_TOKEN, startRealServer, uniqueName, until, wgKey, type RealServer } from './support/real-server.js';

const ROOT = join(import.meta.dirname, '..', '..');
const MAIN = join(ROOT, 'dist', 'cli', 'main.js');

interface Run {
  child: ChildProcess;
  out: { stdout: string; stderr: string };
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>;
}

let rs: RealServer;

/** `fleetplane ctl ...args` as a real process; the server URL and admin token come from the environment unless `env` says otherwise. */
function ctl(args: readonly string[], env: Record<string, string | undefined> = {}): Run {
  const out = { stdout: '', stderr: '' };
  const child = spawn(process.execPath, [MAIN, 'ctl', ...args], {
    cwd: ROOT,
    env: { ...process.env, FLEETPLANE_URL: rs.url, FLEETPLANE_TOKEN: ADMIN_TOKEN, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.setEncoding('utf8').on('data', (d: string) => (out.stdout += d));
  child.stderr?.setEncoding('utf8').on('data', (d: string) => (out.stderr += d));
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>((resolve) =>
    child.once('close', (code, signal) => resolve({ code, signal, ...out })),
  );
  return { child, out, exit };
}

/** Runs to the end (async: the server runs in this process, a sync spawn would block it). */
function run(args: readonly string[], env?: Record<string, string | undefined>) {
  return ctl(args, env).exit;
}

function json<T>(text: string): T {
  return JSON.parse(text) as T;
}

beforeAll(async () => {
  // `npm test` builds dist first (pretest); a direct vitest run may not have.
  if (!existsSync(join(ROOT, 'dist', 'cli', 'ctl', 'index.js'))) {
    await new Promise((resolve) => spawn('npx', ['tsc', '-p', 'tsconfig.json'], { cwd: ROOT, stdio: 'ignore' }).once('close', resolve));
  }
  expect(existsSync(MAIN)).toBe(true);
  rs = await startRealServer({ bookmarkInterval: 0.2 });
}, 180_000);
afterAll(async () => {
  await rs?.close();
});

describe('fleetplane ctl as a real process against a real server', () => {
  it('orgs create and list, as tables and as JSON', async () => {
    const name = uniqueName('ctl-org');
    const created = await run(['orgs', 'create', '--name', name, '--description', 'from ctl']);
    expect(created).toMatchObject({ code: 0, stderr: '' });
    expect(created.stdout).toMatch(/^FIELD\s+VALUE\n/);
    expect(created.stdout).toMatch(new RegExp(`^name\\s+${name}$`, 'm'));

    const asJson = await run(['orgs', 'create', '--name', `${name}-json`, '--output', 'json']);
    expect(asJson.code).toBe(0);
    const org = json<Organization>(asJson.stdout);
    expect(await rs.admin.organizations.get(org.id)).toEqual(org);

    const table = await run(['orgs', 'list']);
    expect(table.code).toBe(0);
    const lines = table.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^ID\s+NAME\s+CIDR\s+MTU\s+REVISION\s+DESCRIPTION$/);
    expect(lines.find((l) => l.startsWith(org.id))).toMatch(new RegExp(`^${org.id}\\s+${name}-json\\s+100\\.64\\.0\\.0/16\\s+1420\\s+${org.revision}$`));
    expect(lines.some((l) => new RegExp(`\\s${name}\\s.*from ctl$`).test(l))).toBe(true);

    const list = await run(['orgs', 'list', '-o', 'json'], { FLEETPLANE_URL: undefined, FLEETPLANE_TOKEN: undefined });
    // Without the environment, flags are required: a usage error.
    expect(list.code).toBe(2);
    const flagged = await run(['orgs', 'list', '-o', 'json', '--server', rs.url, '--token', ADMIN_TOKEN], { FLEETPLANE_URL: undefined, FLEETPLANE_TOKEN: undefined });
    expect(flagged.code).toBe(0);
    expect(json<Organization[]>(flagged.stdout)).toEqual((await rs.admin.organizations.list()).items);
  });

  it('devices list, tokens create and registration-keys create', async () => {
    const org = (await rs.admin.organizations.create({ name: uniqueName('ctl-dev') })).id;
    const d = await rs.admin.devices.create(org, { hostname: 'ctl-host', public_key: wgKey() });

    const table = await run(['devices', 'list', '--org', org]);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/^ID\s+HOSTNAME\s+TUNNEL IP\s+ONLINE\s+APPLIED\s+REVISION\n/);
    expect(table.stdout).toMatch(new RegExp(`^${d.id}\\s+ctl-host\\s+100\\.64\\.0\\.1\\s+false\\s+-\\s+${d.revision}$`, 'm'));
    const listed = await run(['devices', 'list', '--org', org, '-o', 'json']);
    expect(json<Array<{ id: string }>>(listed.stdout).map((x) => x.id)).toEqual([d.id]);

    const token = await run(['tokens', 'create', '--org', org, '--role', 'read', '--description', 'ci', '-o', 'json']);
    expect(token).toMatchObject({ code: 0, stderr: '' });
    const created = json<CreatedOrgToken>(token.stdout);
    expect(created).toMatchObject({ role: 'read', description: 'ci', organization_id: org });
    // The printed token works, with its role.
    const reader = new FleetplaneClient({ baseUrl: rs.url, token: created.token });
    expect((await reader.devices.list(org)).items.map((x) => x.id)).toEqual([d.id]);
    // For people, a reminder on stderr that the secret is shown once.
    const tableToken = await run(['tokens', 'create', '--org', org, '--role', 'admin']);
    expect(tableToken.code).toBe(0);
    expect(tableToken.stdout).toMatch(/^token\s+fpt_\S+$/m);
    expect(tableToken.stderr).toMatch(/shown only this once/);

    const key = await run(['registration-keys', 'create', '--org', org, '--single-use', '-o', 'json']);
    expect(key.code).toBe(0);
    const k = json<CreatedRegistrationKey>(key.stdout);
    expect(k).toMatchObject({ single_use: true, used: false });
    const enrolled = await rs.admin.devices.enroll(org, k.key, { hostname: 'via-key', public_key: wgKey() });
    expect(enrolled.device_token).toMatch(/^fpd_/);
  });

  it('watch device --output json streams NDJSON until killed', async () => {
    const org = (await rs.admin.organizations.create({ name: uniqueName('ctl-watch') })).id;
    const before = await rs.admin.devices.create(org, { hostname: 'before', public_key: wgKey() });
    const w = ctl(['watch', 'device', '--org', org, '--output', 'json']);
    try {
      const lines = () => w.out.stdout.split('\n').filter((l) => l !== '').map((l) => json<{ type: string; kind?: string; value: { id?: string; hostname?: string } }>(l));
      await until(() => lines().some((e) => e.type === 'tail'), 'the listing to reach its tail', 20_000);
      const after = await rs.admin.devices.create(org, { hostname: 'after', public_key: wgKey() });
      await until(() => lines().some((e) => e.type === 'change' && e.value.id === after.id), 'the new device on the stream', 20_000);
      const events = lines().filter((e) => e.type !== 'bookmark');
      expect(events.map((e) => `${e.kind} ${e.type} ${e.value.hostname ?? ''}`)).toEqual(['device change before', 'device tail ', 'device change after']);
      expect(events[0]?.value.id).toBe(before.id);
    } finally {
      w.child.kill('SIGINT');
    }
    const end = await w.exit;
    // Interrupted by the user: a clean end.
    expect([end.code, end.stderr]).toEqual([0, '']);
  });

  it('watch prints one line per event for people, until killed', async () => {
    const org = (await rs.admin.organizations.create({ name: uniqueName('ctl-watch-human') })).id;
    const d = await rs.admin.devices.create(org, { hostname: 'shown', public_key: wgKey() });
    const head = (await rs.admin.devices.list(org)).revision;
    const w = ctl(['watch', 'devices', '--org', org]);
    try {
      await until(() => w.out.stdout.includes('listed'), 'the tail line', 20_000);
    } finally {
      w.child.kill('SIGTERM');
    }
    const end = await w.exit;
    expect(end.code).toBe(0);
    expect(end.stdout.split('\n').filter((l) => l !== '')).toEqual([
      `${String(d.revision).padStart(8)}  device          changed  ${d.id}  shown 100.64.0.1`,
      `${String(head).padStart(8)}  device          listed; following changes`,
    ]);
  });

  it('a bad token: one clear line on stderr, exit 1', async () => {
    const res = await run(['orgs', 'list'], { FLEETPLANE_TOKEN: 'fpt_not_a_token' });
    expect(res.code).toBe(1);
    expect(res.stdout).toBe('');
    expect(res.stderr).toMatch(/^error: .+ \(unauthorized, HTTP 401\)\n$/);
  });

  it('a usage error: one line naming the mistake, exit 2', async () => {
    const flag = await run(['orgs', 'list', '--no-such-flag']);
    expect(flag.code).toBe(2);
    expect(flag.stdout).toBe('');
    expect(flag.stderr).toMatch(/^fleetplane ctl: .*--no-such-flag.* \(see 'fleetplane ctl --help'\)\n$/);

    const resource = await run(['gadgets', 'list']);
    expect([resource.code, resource.stderr]).toEqual([2, `fleetplane ctl: unknown resource "gadgets" (see 'fleetplane ctl --help')\n`]);

    const missingOrg = await run(['devices', 'list']);
    expect([missingOrg.code, missingOrg.stderr]).toEqual([2, `fleetplane ctl: --org is required for this command (see 'fleetplane ctl --help')\n`]);
  });
});
