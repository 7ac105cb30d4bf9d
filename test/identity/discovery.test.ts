/**
 * The discovery document against a real provider, with a fetch that can be made to fail (an
 * outage between fleetplane and the issuer) and a clock the test moves.
 */
import { describe, expect, it } from 'vitest';
import { DiscoveryCache, IdentityError, makeOidcSettings, type FetchLike } from '../../src/server/identity/index.js';
import { CLIENTS, RecordingLogger, useTestProvider } from './support/fixtures.js';

const provider = useTestProvider();

interface World {
  cache: DiscoveryCache;
  logger: RecordingLogger;
  /** Discovery requests that reached the network (successful or not). */
  attempts(): number;
  setOutage(down: boolean): void;
  advance(ms: number): void;
}

function world(overrides: { issuer?: string } = {}): World {
  let now = 1_700_000_000_000;
  let down = false;
  let attempts = 0;
  const fetchThroughOutage: FetchLike = (url, init) => {
    attempts += 1;
    return down ? Promise.reject(new TypeError('fetch failed (test outage)')) : fetch(url, init);
  };
  const logger = new RecordingLogger();
  const settings = makeOidcSettings({
    issuer: overrides.issuer ?? provider.get().issuer,
    clientId: CLIENTS.fleetplane.client_id,
    clientSecret: CLIENTS.fleetplane.client_secret,
    logger,
    fetch: fetchThroughOutage,
    now: () => now,
    discoveryTtlMs: 60_000,
    discoveryMaxStaleMs: 600_000,
    retryBaseMs: 1_000,
    retryCapMs: 8_000,
  });
  return {
    cache: new DiscoveryCache(settings),
    logger,
    attempts: () => attempts,
    setOutage: (d) => {
      down = d;
    },
    advance: (ms) => {
      now += ms;
    },
  };
}

describe('discovery document', () => {
  it('is read once per TTL, and shared by concurrent callers', async () => {
    const w = world();
    const [a, b] = await Promise.all([w.cache.get(), w.cache.get()]);
    expect(a).toBe(b);
    expect(w.attempts()).toBe(1);
    expect(a).toMatchObject({
      issuer: provider.get().issuer,
      token_endpoint: `${provider.get().issuer}/token`,
      device_authorization_endpoint: `${provider.get().issuer}/device/auth`,
      code_challenge_methods_supported: ['S256'],
      authorization_response_iss_parameter_supported: true,
    });
    w.advance(59_000);
    await w.cache.get();
    expect(w.attempts()).toBe(1);
    w.advance(2_000);
    await w.cache.get();
    expect(w.attempts()).toBe(2);
  });

  it('serves the last document while the issuer is unreachable, retrying with backoff, within the stale bound', async () => {
    const w = world();
    const first = await w.cache.get();
    w.setOutage(true);
    w.advance(61_000);
    await expect(w.cache.get()).resolves.toBe(first);
    expect(w.attempts()).toBe(2);
    expect(w.logger.warnings).toHaveLength(1);
    expect(w.logger.warnings[0]?.obj).toMatchObject({ err: { code: 'discovery_failed' } });

    // Each failed read in a row doubles the backoff's ceiling c (1 s, 2 s, 4 s, then the 8 s cap)
    // and waits in [c/2, c): before c/2 callers get the stale document without a read (nor a
    // warning), by c the issuer is asked again.
    let attempts = 2;
    for (const c of [1_000, 2_000, 4_000, 8_000, 8_000]) {
      w.advance(c / 2 - 1);
      await expect(w.cache.get()).resolves.toBe(first);
      expect(w.attempts()).toBe(attempts);
      w.advance(c / 2 + 1);
      await expect(w.cache.get()).resolves.toBe(first);
      attempts += 1;
      expect(w.attempts()).toBe(attempts);
    }
    expect(w.logger.warnings).toHaveLength(attempts - 1);

    // Past TTL + max stale the failure is the caller's.
    w.advance(600_000);
    const err: unknown = await w.cache.get().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(IdentityError);
    expect(err).toMatchObject({ code: 'discovery_failed' });
    expect((err as IdentityError).cause).toBeDefined();

    // Back up: read again once the backoff allows.
    w.setOutage(false);
    w.advance(8_000);
    await expect(w.cache.get()).resolves.toMatchObject({ issuer: provider.get().issuer });
  });

  it('without a document yet, fails and does not hammer the issuer during the backoff', async () => {
    const w = world();
    w.setOutage(true);
    await expect(w.cache.get()).rejects.toMatchObject({ code: 'discovery_failed' });
    await expect(w.cache.get()).rejects.toMatchObject({ code: 'discovery_failed' });
    expect(w.attempts()).toBe(1);
    w.setOutage(false);
    w.advance(1_000);
    await expect(w.cache.get()).resolves.toMatchObject({ issuer: provider.get().issuer });
  });

  it('refuses a document that names another issuer', async () => {
    // The same provider under another spelling of its URL (a trailing slash): discovery must match exactly.
    const w = world({ issuer: `${provider.get().issuer}/` });
    const err: unknown = await w.cache.get().catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'discovery_failed' });
    expect((err as Error).message).toContain('names issuer');
  });
});
