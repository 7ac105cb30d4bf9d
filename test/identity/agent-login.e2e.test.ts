/**
 * `fleetplane agent --login`: a real agent process (render mode, no root)
 * signs in through the device login against a real server process and a
 * real OpenID provider, enrolls as the user, keeps only the device token and
 * revokes the session. A user who may not enroll in the organization stops
 * with an error.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IDENTITY_FILE, type DeviceIdentity } from '../../src/agent/index.js';
import { FleetplaneClient } from '../../src/client/index.js';
import { freePort } from '../support/postgres-server.js';
import { tempDir } from '../agent/support/harness.js';
import { ensureBuilt, spawnFleetplane, waitForOutput, type Proc } from '../agent/support/processes.js';
import { Browser } from './support/browser.js';
import { ACCOUNTS, CLIENTS } from './support/fixtures.js';
import { CAROL } from './support/login-server.js';
import { startTestProvider, type TestProvider } from './support/provider-process.js';
import { approveDevice } from './support/scripted-user.js';

const ADMIN = 'fpa_agent_login_e2e';
const PROMPT = /open (\S+) and enter the code ([A-Z]{4}-[A-Z]{4})/;

describe('agent --login', () => {
  let provider: TestProvider;
  let server: Proc;
  let url = '';
  let work: { path: string; remove: () => Promise<void> };
  const agents: Proc[] = [];

  beforeAll(async () => {
    ensureBuilt();
    work = await tempDir('fp-agent-login-');
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    provider = await startTestProvider({ accounts: [...Object.values(ACCOUNTS), CAROL], clients: [{ ...CLIENTS.fleetplane, redirect_uris: [`${url}/api/auth/oidc/callback`] }] });
    await provider.setKnobs({ deviceIntervalS: 1, slowDownPolls: 0 });
    server = spawnFleetplane(
      'serve',
      ['--memory', '--host', '127.0.0.1', '--port', String(port), '--admin-token', ADMIN, '--log-level', 'warn',
        '--oidc-issuer', provider.issuer, '--oidc-client-id', CLIENTS.fleetplane.client_id, '--oidc-admins', ACCOUNTS.alice.email],
      { env: { FLEETPLANE_OIDC_CLIENT_SECRET: CLIENTS.fleetplane.client_secret } },
    );
    await waitForOutput(server, /listening on http:\/\/127\.0\.0\.1:\d+/, 90_000);
  }, 120_000);

  afterAll(async () => {
    for (const a of agents) await a.stop(5_000);
    await server?.stop(10_000);
    await provider?.stop();
    await work?.remove();
  }, 60_000);

  function agent(dir: string, org: string): Proc {
    const p = spawnFleetplane('agent', ['--server', url, '--login', '--org', org, '--state-dir', dir, '--hostname', 'by-login', '--endpoint', '192.0.2.1:51820', '--log-level', 'info']);
    agents.push(p);
    return p;
  }

  it('enrolls as a server admin in the organization --org names, keeps only the device token, and the enrollment session is revoked', async () => {
    const admin = new FleetplaneClient({ baseUrl: url, token: ADMIN });
    const org = await admin.organizations.create({ name: `login-${process.pid}` });
    const dir = join(work.path, 'alice');
    // By name: looked up among the organizations the session lists.
    const proc = agent(dir, org.name);
    const [, verification = '', code = ''] = await waitForOutput(proc, PROMPT);
    await approveDevice(new Browser(), verification, code, 'alice');
    await waitForOutput(proc, /"msg":"agent starting"/, 60_000);
    const identity = JSON.parse(await readFile(join(dir, IDENTITY_FILE), 'utf8')) as DeviceIdentity;
    expect(identity).toMatchObject({ organization_id: org.id, organization_name: org.name });
    expect(identity.device_token.startsWith('fpd_')).toBe(true);
    const devices = await admin.devices.list(org.id);
    expect(devices.items.map((d) => d.hostname)).toEqual(['by-login']);
    // No session is kept on disk.
    for (const f of await readdir(dir)) {
      const text = await readFile(join(dir, f), 'utf8').catch(() => '');
      expect(text, f).not.toContain('fps_');
    }
    // The session it enrolled with is revoked: alice's only live session is the one made just now.
    expect((await liveSessionsOf(url, 'alice')).map((s) => s.description)).toEqual(['ctl']);
  }, 120_000);

  it('stops with an error when the user may not enroll in the organization', async () => {
    const admin = new FleetplaneClient({ baseUrl: url, token: ADMIN });
    const org = await admin.organizations.create({ name: `login-refused-${process.pid}` });
    const proc = agent(join(work.path, 'carol'), org.id);
    const [, verification = '', code = ''] = await waitForOutput(proc, PROMPT);
    await approveDevice(new Browser(), verification, code, CAROL.username);
    const exit = await proc.exit;
    expect(exit.code).not.toBe(0);
    expect(proc.output()).toMatch(/no member|may not enroll/);
    expect((await admin.devices.list(org.id)).items).toEqual([]);
  }, 120_000);
});

/** Signs `username` in with a device login of its own (as ctl would) and lists that user's live sessions. */
async function liveSessionsOf(url: string, username: string): Promise<{ description: string }[]> {
  const client = new FleetplaneClient({ baseUrl: url });
  const created = await client.auth.deviceLogin({
    client: 'ctl',
    onCode: (l) => void approveDevice(new Browser(), l.verification_uri, l.user_code, username),
  });
  return new FleetplaneClient({ baseUrl: url, token: created.token }).auth.listSessions('me');
}
