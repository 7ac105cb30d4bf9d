/**
 * `fleetplane ctl login`, `sessions` and `logout` as real processes against a
 * real `fleetplane serve` process with user login, and a real OpenID provider
 * process; the user approves the device login in a scripted browser.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FleetplaneClient } from '../../src/client/index.js';
import { buildDist, fleetplane, type Run } from '../support/fleetplane-process.js';
import { freePort } from '../support/postgres-server.js';
import { serve } from '../server/support/serve-process.js';
import { Browser } from './support/browser.js';
import { ACCOUNTS, CLIENTS } from './support/fixtures.js';
import { startTestProvider, type TestProvider } from './support/provider-process.js';
import { approveDevice } from './support/scripted-user.js';

const ADMIN = 'fpa_ctl_login_e2e_admin_token';
let provider: TestProvider;
let server: ReturnType<typeof serve>;
let url: string;
let dir: string;

async function until<T>(f: () => T | undefined | null, what: string, ms = 60_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = f();
    if (v !== undefined && v !== null) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function ctl(args: readonly string[], config: string): Run {
  return fleetplane(['ctl', ...args], { FLEETPLANE_CONFIG: config, FLEETPLANE_URL: undefined, FLEETPLANE_TOKEN: undefined });
}

beforeAll(async () => {
  await buildDist();
  const port = await freePort();
  url = `http://127.0.0.1:${port}`;
  provider = await startTestProvider({ accounts: Object.values(ACCOUNTS), clients: [{ ...CLIENTS.fleetplane, redirect_uris: [`${url}/api/auth/oidc/callback`] }] });
  await provider.setKnobs({ deviceIntervalS: 1, slowDownPolls: 0 });
  dir = mkdtempSync(join(tmpdir(), 'fp-ctl-login-'));
  const secretFile = join(dir, 'secret');
  writeFileSync(secretFile, CLIENTS.fleetplane.client_secret, { mode: 0o600 });
  server = serve([
    '--memory', '--host', '127.0.0.1', '--port', String(port), '--admin-token', ADMIN,
    '--oidc-issuer', provider.issuer, '--oidc-client-id', CLIENTS.fleetplane.client_id, '--oidc-client-secret-file', secretFile,
    '--oidc-admins', ACCOUNTS.alice.email, '--revocation-check-interval', '0.1',
  ]);
  await until(() => /fleetplane is listening on/.exec(server.out.stdout), 'the server banner', 120_000);
}, 180_000);

afterAll(async () => {
  if (server && server.child.exitCode === null) {
    server.child.kill('SIGTERM');
    await server.exit;
  }
  await provider?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('fleetplane ctl login', () => {
  it('prints the URL and code, waits for approval, stores the session (0600), then sessions list and logout work', async () => {
    const config = join(dir, 'config.json');
    const run = ctl(['login', '--server', url, '--context', 'lab'], config);
    const m = await until(() => /open (\S+) and enter the code ([A-Z]{4}-[A-Z]{4})/.exec(run.out.stderr), 'the login prompt');
    expect(run.out.stdout).toBe('');
    await approveDevice(new Browser(), m[1] ?? '', m[2] ?? '', 'alice');
    const done = await run.exit;
    expect(done.code, done.stderr).toBe(0);
    expect(done.stdout).toContain(`signed in as ${ACCOUNTS.alice.email}`);
    expect((await stat(config)).mode & 0o777).toBe(0o600);
    const stored = JSON.parse(await readFile(config, 'utf8')) as { 'current-context': string; contexts: Record<string, { server: string; token: string }> };
    expect(stored['current-context']).toBe('lab');
    const token = stored.contexts['lab']?.token ?? '';
    expect(token.startsWith('fps_')).toBe(true);

    // The stored session is a credential: alice is a bootstrap admin.
    const client = new FleetplaneClient({ baseUrl: url, token });
    expect((await client.auth.session()).user).toMatchObject({ server_admin: true, subject: ACCOUNTS.alice.sub });
    const listed = await ctl(['sessions', 'list', '-o', 'json'], config).exit;
    expect(listed.code, listed.stderr).toBe(0);
    expect(JSON.parse(listed.stdout)).toEqual([expect.objectContaining({ description: 'ctl', current: true })]);

    const out = await ctl(['logout'], config).exit;
    expect(out.code, out.stderr).toBe(0);
    const after = JSON.parse(await readFile(config, 'utf8')) as { contexts: Record<string, { token?: string }> };
    expect(after.contexts['lab']?.token).toBeUndefined();
    await expect(client.auth.session()).rejects.toMatchObject({ code: 'unauthorized' });
  }, 120_000);

  it('fails with the login error when the user refuses, exit 1, nothing stored', async () => {
    const config = join(dir, 'denied.json');
    const run = ctl(['login', '--server', url], config);
    const m = await until(() => /open (\S+) and enter the code ([A-Z]{4}-[A-Z]{4})/.exec(run.out.stderr), 'the login prompt');
    await approveDevice(new Browser(), m[1] ?? '', m[2] ?? '', 'alice', { deny: true });
    const done = await run.exit;
    expect(done.code).toBe(1);
    expect(done.stderr).toMatch(/access_denied|refused/);
    await expect(stat(config)).rejects.toMatchObject({ code: 'ENOENT' });
  }, 120_000);
});
