/**
 * `fleetplane ctl` and device tokens over time, against a real server:
 * `devices list --expiring-within`, the TOKEN EXPIRES and EPHEMERAL columns of
 * `-o wide`, and `registration-keys create --ephemeral`. The first command runs
 * as a real process; the rest run in process through `runCtl`, the function
 * that process calls (ctl-process.test.ts covers what a process adds, and a
 * process start costs seconds under load).
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedRegistrationKey, Device } from '../../src/client/index.js';
import { ctlAt } from '../client/support/ctl-runner.js';
import { buildDist, fleetplane } from '../support/fleetplane-process.js';
import { ADMIN_TOKEN, startRealServer, uniqueName, wgKey, type RealServer } from './support/real-server.js';
import { scratchDir } from '../support/scratch-dir.js';

const TTL_S = 3 * 86_400;
let rs: RealServer;

function runProcess(args: readonly string[], token = ADMIN_TOKEN) {
  const config = join(scratchDir('ctl-tokens'), 'config.json');
  return fleetplane(['ctl', ...args], { FLEETPLANE_URL: rs.url, FLEETPLANE_TOKEN: token, FLEETPLANE_CONFIG: config }).exit;
}

async function run(args: readonly string[], token = ADMIN_TOKEN) {
  const { code, out, err } = await ctlAt(rs.url, token, [...args]);
  return { code, stdout: out, stderr: err };
}

beforeAll(async () => {
  await buildDist();
  rs = await startRealServer({ deviceTokenTtl: TTL_S });
}, 180_000);
afterAll(async () => {
  await rs?.close();
});

describe('ctl and device token expiry', () => {
  it('lists only the devices expiring within a duration, and shows the expiry and ephemeral in -o wide', async () => {
    const name = uniqueName('ctl-expiry');
    const org = (await rs.admin.organizations.create({ name })).id;
    const created = await runProcess(['registration-keys', 'create', '--org', name, '--ephemeral', '-o', 'json']);
    expect(created.code, created.stderr).toBe(0);
    const key = JSON.parse(created.stdout) as CreatedRegistrationKey;
    expect(key.ephemeral).toBe(true);
    const soon = await rs.admin.devices.enroll(org, key.key, { hostname: 'soon', public_key: wgKey() });
    const later = await rs.admin.devices.enroll(org, key.key, { hostname: 'later', public_key: wgKey() });
    // Both expire in 3 days; `soon` is brought to 1 day.
    await rs.server.db.query(`UPDATE tokens SET expires_at = now() + interval '1 day' WHERE device_id = $1`, [soon.id]);

    const within = await run(['devices', 'list', '--org', name, '--expiring-within', '2d', '-o', 'json']);
    expect(within.code, within.stderr).toBe(0);
    expect((JSON.parse(within.stdout) as Device[]).map((d) => d.hostname)).toEqual(['soon']);
    const all = await run(['devices', 'list', '--org', name, '--expiring-within', '4d', '-o', 'json']);
    expect((JSON.parse(all.stdout) as Device[]).map((d) => d.hostname).sort()).toEqual(['later', 'soon']);

    const wide = await run(['devices', 'list', '--org', name, '-o', 'wide']);
    expect(wide.code, wide.stderr).toBe(0);
    const [header, ...lines] = wide.stdout.trimEnd().split('\n');
    expect(header).toMatch(/EPHEMERAL\s+TOKEN EXPIRES$/);
    expect(lines.find((l) => l.startsWith(soon.id))).toMatch(/true\s+in (23h|24h|1d)$/);
    expect(lines.find((l) => l.startsWith(later.id))).toMatch(/true\s+in (2d|3d)$/);

    // A read token lists without the column's values, and may not filter by expiry.
    const read = (await rs.admin.tokens.create(org, { role: 'read' })).token;
    const readWide = await run(['devices', 'list', '--org', org, '-o', 'wide'], read);
    expect(readWide.code, readWide.stderr).toBe(0);
    expect(readWide.stdout.split('\n').find((l) => l.startsWith(soon.id))).toMatch(/true\s+-$/);
    const refused = await run(['devices', 'list', '--org', org, '--expiring-within', '7d'], read);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/forbidden|may not/);

    const bad = await run(['devices', 'list', '--org', name, '--expiring-within', 'soon']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--expiring-within/);
  });
});
