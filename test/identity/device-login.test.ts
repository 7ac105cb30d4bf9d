/**
 * The device login (RFC 8628) against a real OpenID provider: fleetplane polls while the test
 * plays the user in a browser (opens the verification URI, enters the code, signs in, confirms).
 */
import { describe, expect, it } from 'vitest';
import type { FetchLike } from '../../src/server/identity/index.js';
import { Browser, textById } from './support/browser.js';
import { ACCOUNTS, loginFor, RecordingLogger, refusal, useTestProvider } from './support/fixtures.js';
import { approveDevice } from './support/scripted-user.js';

const provider = useTestProvider();

/** Resolves once the provider has answered `count` device polls after `since`. */
async function polled(count: number, since: number): Promise<void> {
  for (let i = 0; i < 200; i += 1) {
    const seen = (await provider.get().stats()).tokenRequests.filter((r) => r.at >= since).length;
    if (seen >= count) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`the provider did not see ${count} polls`);
}

describe('device login (RFC 8628)', () => {
  it('polls at the interval, slows down by 5 s on slow_down, and signs in once the user approves', async () => {
    const p = provider.get();
    await p.setKnobs({ deviceIntervalS: 1, slowDownPolls: 1 });
    const login = loginFor(p);
    const since = Date.now();
    const authorization = await login.startDeviceLogin();
    expect(authorization.intervalS).toBe(1);
    expect(authorization.userCode).toMatch(/^[A-Z]{4}-[A-Z]{4}$/);
    expect(authorization.verificationUri).toBe(`${p.issuer}/device`);

    const slowDowns: number[] = [];
    const signedIn = login.finishDeviceLogin(authorization, { signal: AbortSignal.timeout(30_000), onSlowDown: (s) => slowDowns.push(s) });
    // The first poll is answered slow_down; the user approves while the poller waits 6 s.
    await polled(1, since);
    const last = await approveDevice(new Browser(), authorization.verificationUri, authorization.userCode, 'alice');
    expect(textById(last, 'device-success')).toBe('Sign-in complete');

    const result = await signedIn;
    expect(result.identity).toMatchObject({ subject: ACCOUNTS.alice.sub, email: 'alice@example.com', emailVerified: true });
    expect(result.identity.claims.nonce).toBeUndefined();
    expect(slowDowns).toEqual([6]);

    const polls = (await p.stats()).tokenRequests.filter((r) => r.at >= since);
    expect(polls.map((r) => r.error)).toEqual(['slow_down', null]);
    const [first, second] = polls;
    if (!first || !second) throw new Error('two polls expected');
    expect(first.at - since).toBeGreaterThanOrEqual(1_000);
    expect(second.at - first.at).toBeGreaterThanOrEqual(6_000);
  });

  it('polls again on authorization_pending, at the interval', async () => {
    const p = provider.get();
    await p.setKnobs({ deviceIntervalS: 1, slowDownPolls: 0 });
    const login = loginFor(p);
    const since = Date.now();
    const authorization = await login.startDeviceLogin();
    const signedIn = login.finishDeviceLogin(authorization, { signal: AbortSignal.timeout(30_000) });
    await polled(2, since);
    await approveDevice(new Browser(), authorization.verificationUri, authorization.userCode, 'alice');
    await expect(signedIn).resolves.toMatchObject({ identity: { subject: ACCOUNTS.alice.sub } });
    const polls = (await p.stats()).tokenRequests.filter((r) => r.at >= since);
    expect(polls.slice(0, 2).map((r) => r.error)).toEqual(['authorization_pending', 'authorization_pending']);
    expect(polls.at(-1)?.error).toBeNull();
    // RFC 8628 §3.5: the interval is waited before the first poll too.
    expect((polls[0]?.at ?? 0) - since).toBeGreaterThanOrEqual(1_000);
    for (let i = 1; i < polls.length; i += 1) {
      expect((polls[i]?.at ?? 0) - (polls[i - 1]?.at ?? 0)).toBeGreaterThanOrEqual(1_000);
    }
  });

  it('ends with access_denied when the user refuses', async () => {
    const p = provider.get();
    await p.setKnobs({ deviceIntervalS: 1, slowDownPolls: 0 });
    const login = loginFor(p);
    const authorization = await login.startDeviceLogin();
    const signedIn = refusal(login.finishDeviceLogin(authorization, { signal: AbortSignal.timeout(30_000) }));
    await approveDevice(new Browser(), authorization.verificationUri, authorization.userCode, 'alice', { deny: true });
    expect(await signedIn).toMatchObject({ code: 'access_denied', oauthError: 'access_denied' });
  });

  it('ends with expired_token when nobody approves before the device code expires', async () => {
    const p = provider.get();
    await p.setKnobs({ deviceIntervalS: 1, slowDownPolls: 0, deviceCodeTtlS: 2 });
    try {
      const login = loginFor(p);
      const authorization = await login.startDeviceLogin();
      const started = Date.now();
      const err = await refusal(login.finishDeviceLogin(authorization, { signal: AbortSignal.timeout(30_000) }));
      expect(err.code).toBe('expired_token');
      expect(Date.now() - started).toBeLessThan(5_000);
    } finally {
      await p.setKnobs({ deviceCodeTtlS: 600 });
    }
  });

  it('stops polling at once when the signal aborts, mid-wait', async () => {
    const p = provider.get();
    await p.setKnobs({ deviceIntervalS: 5, slowDownPolls: 0 });
    const login = loginFor(p);
    const authorization = await login.startDeviceLogin();
    const controller = new AbortController();
    const signedIn = refusal(login.finishDeviceLogin(authorization, { signal: controller.signal }));
    const reason = new Error('the user pressed ^C');
    setTimeout(() => controller.abort(reason), 300);
    const started = Date.now();
    const err = await signedIn;
    expect(err.code).toBe('aborted');
    expect(err.cause).toBe(reason);
    // Not at the end of the 5 s interval.
    expect(Date.now() - started).toBeLessThan(1_000);
  });

  it('retries a poll lost in transit after the interval plus a backoff, and says so', async () => {
    const p = provider.get();
    await p.setKnobs({ deviceIntervalS: 1, slowDownPolls: 0 });
    let lostAt: number | undefined;
    const logger = new RecordingLogger();
    const flaky: FetchLike = (url, init) => {
      if (url.endsWith('/token') && lostAt === undefined) {
        lostAt = Date.now();
        return Promise.reject(new TypeError('fetch failed (connection reset)'));
      }
      return fetch(url, init);
    };
    const login = loginFor(p, { fetch: flaky, logger });
    const authorization = await login.startDeviceLogin();
    const signedIn = login.finishDeviceLogin(authorization, { signal: AbortSignal.timeout(30_000) });
    await approveDevice(new Browser(), authorization.verificationUri, authorization.userCode, 'alice');
    await expect(signedIn).resolves.toMatchObject({ identity: { subject: ACCOUNTS.alice.sub } });
    const lost = lostAt;
    if (lost === undefined) throw new Error('no poll was lost');
    expect(logger.warnings).toHaveLength(1);
    expect(logger.warnings[0]?.obj).toMatchObject({ err: { code: 'http_failed' }, failures: 1 });
    // The interval (1 s) plus a full-jitter backoff whose first ceiling is the interval.
    const { retryInMs } = logger.warnings[0]?.obj as { retryInMs: number };
    expect(retryInMs).toBeGreaterThanOrEqual(1_000);
    expect(retryInMs).toBeLessThan(2_000);
    const retried = (await p.stats()).tokenRequests.find((r) => r.at >= lost);
    expect((retried?.at ?? 0) - lost).toBeGreaterThanOrEqual(1_000);
  });

  it('polls once per call for a caller that paces itself, and applies the policy once approved', async () => {
    const p = provider.get();
    await p.setKnobs({ deviceIntervalS: 1, slowDownPolls: 1 });
    const login = loginFor(p, { policy: { emails: ['alice@example.com'] } });
    const alice = await login.startDeviceLogin();
    await expect(login.pollDeviceLogin(alice)).resolves.toEqual({ status: 'slow_down' });
    await expect(login.pollDeviceLogin(alice)).resolves.toEqual({ status: 'pending' });
    await approveDevice(new Browser(), alice.verificationUri, alice.userCode, 'alice');
    await expect(login.pollDeviceLogin(alice)).resolves.toMatchObject({ status: 'approved', result: { matchedBy: 'email', identity: { subject: ACCOUNTS.alice.sub } } });

    const mallory = await login.startDeviceLogin();
    await approveDevice(new Browser(), mallory.verificationUri, mallory.userCode, 'mallory');
    expect(await refusal(login.pollDeviceLogin(mallory))).toMatchObject({ code: 'sign_in_refused', refusal: { reason: 'email_not_allowed' } });
  });

  it('applies the sign-in policy to the device login', async () => {
    const p = provider.get();
    await p.setKnobs({ deviceIntervalS: 1, slowDownPolls: 0 });
    const login = loginFor(p, { policy: { emails: ['alice@example.com'] } });
    const authorization = await login.startDeviceLogin();
    const signedIn = refusal(login.finishDeviceLogin(authorization, { signal: AbortSignal.timeout(30_000) }));
    await approveDevice(new Browser(), authorization.verificationUri, authorization.userCode, 'mallory');
    expect(await signedIn).toMatchObject({ code: 'sign_in_refused', refusal: { reason: 'email_not_allowed' } });
  });
});
