import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { startServer, type FleetServer, type Settings } from '../../../src/server/index.js';
import { freePort } from '../../support/postgres-server.js';
import { ACCOUNTS, CLIENTS } from './fixtures.js';
import type { TestAccount } from './provider-config.js';
import { startTestProvider, type TestProvider } from './provider-process.js';

/** A signed-in user who is not named by --oidc-admins. */
export const CAROL = { username: 'carol', sub: 'sub-carol', email: 'carol@example.com', emailVerified: true, name: 'Carol' } satisfies TestAccount;

export interface LoginServer {
  readonly provider: TestProvider;
  readonly server: FleetServer;
  /** The server's origin, as registered at the provider (`http://127.0.0.1:<port>`). */
  readonly origin: string;
  readonly admin: string;
}

/**
 * A listening fleetplane server with user login against a real provider
 * process: the provider knows the server's callback, the server reads the
 * client secret from a file, alice is a bootstrap admin, and only verified
 * example.com emails may sign in.
 */
export function useLoginServer(overrides: Partial<Settings> = {}): { get(): LoginServer } {
  let state: LoginServer | undefined;
  let dir: string | undefined;
  beforeAll(async () => {
    const port = await freePort();
    const origin = `http://127.0.0.1:${port}`;
    const provider = await startTestProvider({
      accounts: [...Object.values(ACCOUNTS), CAROL],
      clients: [{ ...CLIENTS.fleetplane, redirect_uris: [`${origin}/api/auth/oidc/callback`] }],
    });
    dir = mkdtempSync(join(tmpdir(), 'fleetplane-login-'));
    const secretFile = join(dir, 'client-secret');
    writeFileSync(secretFile, `${CLIENTS.fleetplane.client_secret}\n`, { mode: 0o600 });
    const server = await startServer({
      memory: true,
      logLevel: 'silent',
      host: '127.0.0.1',
      port,
      revocationCheckInterval: 0.1,
      oidcIssuer: provider.issuer,
      oidcClientId: CLIENTS.fleetplane.client_id,
      oidcClientSecretFile: secretFile,
      oidcAllowedDomains: 'example.com',
      oidcAdmins: ACCOUNTS.alice.email,
      ...overrides,
    });
    const admin = server.adminToken.token;
    if (admin === undefined) throw new Error('no admin token');
    state = { provider, server, origin, admin };
  }, 60_000);
  afterAll(async () => {
    await state?.server.close();
    await state?.provider.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });
  return {
    get() {
      if (!state) throw new Error('the login server is not running');
      return state;
    },
  };
}
