import { afterAll, beforeAll } from 'vitest';
import { IdentityError, OidcLogin, type IdentityLogger, type OidcLoginOptions } from '../../../src/server/identity/index.js';
import type { TestAccount, TestClient } from './provider-config.js';
import { startTestProvider, type TestProvider } from './provider-process.js';

/** The relying party's callback; nothing listens there: the test browser stops at it. */
export const REDIRECT_URI = 'http://127.0.0.1:9/auth/oidc/callback';

export const ACCOUNTS = {
  alice: { username: 'alice', sub: 'sub-alice', email: 'alice@example.com', emailVerified: true, name: 'Alice' },
  bob: { username: 'bob', sub: 'sub-bob', email: 'Bob@Example.com', emailVerified: false },
  mallory: { username: 'mallory', sub: 'sub-mallory', email: 'mallory@evil.test', emailVerified: true },
  nomail: { username: 'nomail', sub: 'sub-nomail' },
} satisfies Record<string, TestAccount>;

/** fleetplane's client (secret in the Authorization header), and another application (secret in the body). */
export const CLIENTS = {
  fleetplane: { client_id: 'fleetplane', client_secret: 'fleetplane-secret', redirect_uris: [REDIRECT_URI], token_endpoint_auth_method: 'client_secret_basic' },
  other: { client_id: 'other-app', client_secret: 'other-secret', redirect_uris: [REDIRECT_URI], token_endpoint_auth_method: 'client_secret_post' },
} satisfies Record<string, TestClient>;

/** A logger that keeps what it was told, for assertions. */
export class RecordingLogger implements IdentityLogger {
  readonly warnings: { obj: object; msg: string }[] = [];
  warn(obj: object, msg: string): void {
    this.warnings.push({ obj, msg });
  }
}

/** One test provider for the file; `get()` inside tests. */
export function useTestProvider(): { get(): TestProvider } {
  let provider: TestProvider | undefined;
  beforeAll(async () => {
    provider = await startTestProvider({ accounts: Object.values(ACCOUNTS), clients: Object.values(CLIENTS) });
  });
  afterAll(async () => {
    await provider?.stop();
  });
  return {
    get() {
      if (!provider) throw new Error('the test provider is not running');
      return provider;
    },
  };
}

/** fleetplane's login against `provider`, as the client `client`, with `overrides`. */
export function loginFor(provider: TestProvider, overrides: Partial<OidcLoginOptions> = {}, client: TestClient = CLIENTS.fleetplane): OidcLogin {
  return new OidcLogin({
    issuer: provider.issuer,
    clientId: client.client_id,
    clientSecret: client.client_secret,
    clientAuthMethod: client.token_endpoint_auth_method,
    logger: new RecordingLogger(),
    httpTimeoutMs: 5_000,
    ...overrides,
  });
}

/** The IdentityError `promise` rejects with; fails the test when it resolves or rejects otherwise. */
export async function refusal(promise: Promise<unknown>): Promise<IdentityError> {
  const err: unknown = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof IdentityError)) throw new Error(`expected an IdentityError, got ${String(err)}`, { cause: err });
  return err;
}
