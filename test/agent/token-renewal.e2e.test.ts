/**
 * An agent renews its device token by itself (docs/protocol.md "Device tokens
 * over time"): a real agent process in render mode against a real server
 * process with a 6 s token lifetime renews at least twice, persists each new
 * token, and stays connected and converged past its first token's expiry.
 * What is checked is the outcome (tokens changed, old ones refused, the agent
 * alive and at the head), never how long anything took.
 */
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IDENTITY_FILE, type DeviceIdentity } from '../../src/agent/index.js';
import { AuthError, FleetplaneClient } from '../../src/client/index.js';
import { tempDir, until } from './support/harness.js';
import { ensureBuilt, spawnFleetplane, waitForOutput, type Proc } from './support/processes.js';

const ADMIN = 'fpa_token_renewal_e2e';
const TTL_S = 6;

async function identityOf(dir: string): Promise<DeviceIdentity | undefined> {
  try {
    return JSON.parse(await readFile(join(dir, IDENTITY_FILE), 'utf8')) as DeviceIdentity;
  } catch {
    return undefined;
  }
}

describe('an agent process renewing its device token', () => {
  let server: Proc;
  let agent: Proc | undefined;
  let url = '';
  let work: { path: string; remove: () => Promise<void> };

  beforeAll(async () => {
    ensureBuilt();
    work = await tempDir('fp-renew-');
    server = spawnFleetplane('serve', [
      '--memory', '--host', '127.0.0.1', '--port', '0', '--admin-token', ADMIN, '--log-level', 'warn',
      '--device-token-ttl', String(TTL_S), '--revocation-check-interval', '0.5', '--bookmark-interval', '1',
    ]);
    [, url = ''] = await waitForOutput(server, /listening on (http:\/\/127\.0\.0\.1:\d+)/, 90_000);
  }, 120_000);

  afterAll(async () => {
    await agent?.stop(5_000);
    await server?.stop(10_000);
    await work?.remove();
  }, 60_000);

  it('renews at least twice, persists each token, and stays connected and converged', async () => {
    const admin = new FleetplaneClient({ baseUrl: url, token: ADMIN });
    const org = await admin.organizations.create({ name: `renew-${process.pid}` });
    const key = await admin.registrationKeys.create(org.id, { description: 'renew' });
    const dir = join(work.path, 'agent');
    agent = spawnFleetplane(
      'agent',
      ['--server', url, '--state-dir', dir, '--hostname', 'renewer', '--endpoint', '192.0.2.1:51820', '--status-interval', '5', '--log-level', 'info'],
      { env: { FLEETPLANE_AGENT_REGISTRATION_KEY: key.key }, logFile: join(work.path, 'agent.log') },
    );
    const proc = agent;
    const first = await until(() => identityOf(dir), 'the agent to enroll', 60_000);
    expect(first.device_token_expires_at).toBeTruthy();

    // Each token the agent persisted, in order.
    const seen: DeviceIdentity[] = [first];
    await until(
      async () => {
        if (proc.child.exitCode !== null) throw new Error(`the agent exited: ${proc.output()}`);
        const now = await identityOf(dir);
        if (now && now.device_token !== seen[seen.length - 1]?.device_token) seen.push(now);
        return seen.length >= 3 ? true : undefined;
      },
      'two renewals',
      60_000,
    ).catch((err: unknown) => {
      throw new Error(`${String(err)}; agent log:\n${proc.output().slice(-4000)}`);
    });

    const last = seen[seen.length - 1]!;
    // Each renewal moved the expiry on; the device stayed the same device.
    for (let i = 1; i < seen.length; i++) {
      expect(Date.parse(seen[i]!.device_token_expires_at ?? '')).toBeGreaterThan(Date.parse(seen[i - 1]!.device_token_expires_at ?? ''));
      expect(seen[i]!.device_id).toBe(first.device_id);
    }
    expect((await stat(join(dir, IDENTITY_FILE))).mode & 0o777).toBe(0o600);

    // The first token expired (the agent outlived it); the persisted one works.
    await until(async () => Date.now() > Date.parse(first.device_token_expires_at ?? '') + 1_000 || undefined, "the first token's expiry");
    const byFirst = new FleetplaneClient({ baseUrl: url, token: first.device_token });
    await expect(byFirst.devices.get(org.id, first.device_id)).rejects.toBeInstanceOf(AuthError);
    const current = (await identityOf(dir)) ?? last;
    expect((await new FleetplaneClient({ baseUrl: url, token: current.device_token }).devices.get(org.id, first.device_id)).id).toBe(first.device_id);

    // Still connected: its tunnel answers, a change reaches it, and it reports the head.
    expect(proc.child.exitCode).toBeNull();
    expect(await admin.devices.rpc(org.id, first.device_id, 'ping', {}, { wait: 10 })).toMatchObject({ pong: true });
    await admin.securityGroups.create(org.id, { description: 'after-renewals', inbound_rules: [], outbound_rules: [] });
    await until(async () => {
      const c = await admin.convergence(org.id);
      return c.at_head === 1 && c.online === 1 ? c : undefined;
    }, 'the agent at the head and online', 30_000);
    // The device object never changed for a renewal: its revision is its enrollment's.
    const device = await admin.devices.get(org.id, first.device_id);
    expect(device.created_at).toBe(device.updated_at);
    expect(proc.output()).not.toMatch(/"level":(50|60)/);
  }, 180_000);
});
