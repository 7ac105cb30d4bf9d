/**
 * The agent's device token over time (src/agent/identity/token-renewal.ts and the
 * agent's reaction to an expired token): when it renews, that it persists
 * before using, and that an expired token stops the agent with `token_expired`.
 */
import { mkdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { AgentFatalError, IDENTITY_FILE, StateDir, type DeviceIdentity } from '../../src/agent/index.js';
import { DeviceCredential, RENEW_AT, RENEW_JITTER } from '../../src/agent/identity/token-renewal.js';
import { FleetplaneClient, type FetchLike } from '../../src/client/index.js';
import { agentOptions, orgWithKey, runAgent, startListeningServer, tempDir, until } from './support/harness.js';

const silent = pino({ level: 'silent' });
const ISSUED = Date.parse('2030-01-01T00:00:00Z');
const LIFETIME = 90 * 86_400_000;

function identity(over: Partial<DeviceIdentity> = {}): DeviceIdentity {
  return {
    device_id: '00000000-0000-4000-8000-000000000001',
    organization_id: '00000000-0000-4000-8000-000000000002',
    device_token: 'fpd_old',
    public_key: 'k',
    server: 'http://127.0.0.1:1',
    enrolled_at: new Date(ISSUED).toISOString(),
    device_token_issued_at: new Date(ISSUED).toISOString(),
    device_token_expires_at: new Date(ISSUED + LIFETIME).toISOString(),
    ...over,
  };
}

/** A server that answers every renewal with a new token, counting them. */
function renewingFetch(): { fetch: FetchLike; calls: string[] } {
  const calls: string[] = [];
  const fetch: FetchLike = async (url, init) => {
    calls.push(`${init.method} ${new URL(url).pathname} ${String((init.headers as Record<string, string>)['authorization'])}`);
    const issued = new Date(ISSUED + LIFETIME).toISOString();
    const body = { device_token: `fpd_new${calls.length}`, issued_at: issued, expires_at: new Date(ISSUED + 2 * LIFETIME).toISOString() };
    return new Response(JSON.stringify(body), { status: 201, headers: { 'content-type': 'application/json' } });
  };
  return { fetch, calls };
}

describe('DeviceCredential', () => {
  it('renews at 2/3 of the lifetime less up to a tenth of it, drawn per token', () => {
    const client = new FleetplaneClient({ baseUrl: 'http://127.0.0.1:1' });
    const at = (random: number) =>
      new DeviceCredential({ client, stateDir: new StateDir('/nonexistent'), identity: identity(), logger: silent, onRenewed: () => undefined, onFatal: () => undefined, random: () => random }).renewAt;
    expect(at(0)).toBe(ISSUED + LIFETIME * RENEW_AT);
    expect(at(1)).toBe(ISSUED + LIFETIME * (RENEW_AT - RENEW_JITTER));
    expect(at(0.5)).toBeGreaterThan(at(1) ?? 0);
    // No known expiry (no TTL, or a state directory from before v1.5): never renewed.
    const never = (id: DeviceIdentity) =>
      new DeviceCredential({ client, stateDir: new StateDir('/nonexistent'), identity: id, logger: silent, onRenewed: () => undefined, onFatal: () => undefined }).renewAt;
    expect(never(identity({ device_token_expires_at: null }))).toBeUndefined();
    const legacy = identity();
    delete legacy.device_token_expires_at;
    delete legacy.device_token_issued_at;
    expect(never(legacy)).toBeUndefined();
  });

  it('writes the renewed token to the state directory before using it, then says so', async () => {
    const dir = await tempDir('fp-credential-');
    try {
      const stateDir = new StateDir(dir.path);
      await stateDir.ensure();
      const { fetch, calls } = renewingFetch();
      let credential!: DeviceCredential;
      const client = new FleetplaneClient({ baseUrl: 'http://127.0.0.1:1', token: () => credential.token, fetch });
      const stop = new AbortController();
      const seen: string[] = [];
      credential = new DeviceCredential({
        client,
        stateDir,
        identity: identity(),
        logger: silent,
        // Already due: the clock is past the first token's renewal time, not yet past the second's.
        now: () => ISSUED + LIFETIME - 1,
        onRenewed: async (next) => {
          const onDisk = JSON.parse(await readFile(join(dir.path, IDENTITY_FILE), 'utf8')) as DeviceIdentity;
          seen.push(onDisk.device_token, next.device_token, credential.token);
          stop.abort();
        },
        onFatal: (err) => {
          throw err;
        },
      });
      await credential.run(stop.signal);
      expect(calls).toEqual(['POST /api/organizations/00000000-0000-4000-8000-000000000002/devices/00000000-0000-4000-8000-000000000001/token Bearer fpd_old']);
      expect(seen).toEqual(['fpd_new1', 'fpd_new1', 'fpd_new1']);
      const saved = (await stateDir.loadIdentity()) as DeviceIdentity;
      expect(saved).toMatchObject({ device_token: 'fpd_new1', device_token_expires_at: new Date(ISSUED + 2 * LIFETIME).toISOString() });
      expect((await stat(stateDir.identityPath)).mode & 0o777).toBe(0o600);
    } finally {
      await dir.remove();
    }
  });

  it('does not use a renewal answer that fails its schema: it renews again and uses the valid answer', async () => {
    const dir = await tempDir('fp-credential-');
    try {
      const stateDir = new StateDir(dir.path);
      await stateDir.ensure();
      const answers = [{ device_token: 'fpd_bad\nX-Injected: 1', issued_at: new Date(ISSUED).toISOString(), expires_at: null }, { device_token: 'fpd_late', issued_at: 'soon', expires_at: null }];
      let calls = 0;
      const fetch: FetchLike = async () => {
        const body = answers[calls++] ?? { device_token: 'fpd_good', issued_at: new Date(ISSUED).toISOString(), expires_at: new Date(ISSUED + 2 * LIFETIME).toISOString() };
        return new Response(JSON.stringify(body), { status: 201, headers: { 'content-type': 'application/json' } });
      };
      let credential!: DeviceCredential;
      const client = new FleetplaneClient({ baseUrl: 'http://127.0.0.1:1', token: () => credential.token, fetch });
      const stop = new AbortController();
      credential = new DeviceCredential({
        client,
        stateDir,
        identity: identity(),
        logger: silent,
        random: () => 0,
        now: () => ISSUED + LIFETIME - 1,
        onRenewed: () => stop.abort(),
        onFatal: (err) => {
          throw err;
        },
      });
      await credential.run(stop.signal);
      expect(calls).toBe(3);
      expect(credential.token).toBe('fpd_good');
      expect((await stateDir.loadIdentity())?.device_token).toBe('fpd_good');
    } finally {
      await dir.remove();
    }
  });

  it('keeps the old token and stops (state_dir) when the new one cannot be written', async () => {
    const dir = await tempDir('fp-credential-');
    try {
      const stateDir = new StateDir(dir.path);
      await stateDir.ensure();
      // A directory where the identity file goes: the rename onto it fails, as a read-only disk would.
      await mkdir(stateDir.identityPath);
      const { fetch } = renewingFetch();
      let credential!: DeviceCredential;
      const client = new FleetplaneClient({ baseUrl: 'http://127.0.0.1:1', token: () => credential.token, fetch });
      let fatal: Error | undefined;
      let renewed = false;
      credential = new DeviceCredential({
        client,
        stateDir,
        identity: identity(),
        logger: silent,
        now: () => ISSUED + LIFETIME - 1,
        onRenewed: () => {
          renewed = true;
        },
        onFatal: (err) => {
          fatal = err;
        },
      });
      await credential.run(new AbortController().signal);
      expect(renewed).toBe(false);
      expect(fatal).toBeInstanceOf(AgentFatalError);
      expect((fatal as AgentFatalError).reason).toBe('state_dir');
      expect(credential.token).toBe('fpd_old');
    } finally {
      await dir.remove();
    }
  });
});

describe('an agent whose token expires before it could renew it', () => {
  it('stops with token_expired and a message telling to enroll again', async () => {
    const { server, url, admin } = await startListeningServer({ deviceTokenTtl: 2 });
    const dir = await tempDir('fp-expired-');
    try {
      const { key } = await orgWithKey(admin, 'expired');
      // Every renewal fails as a network error would: the agent retries until its token is gone.
      const blocked: FetchLike = (input, init) =>
        init.method === 'POST' && /\/token$/.test(new URL(input).pathname) ? Promise.reject(new TypeError('fetch failed')) : fetch(input, init);
      const agent = await runAgent(agentOptions({ stateDir: dir.path, server: url, registrationKey: key }), { fetch: blocked });
      const err = await until(() => agent.done, 'the agent to stop', 30_000);
      expect(err).toBeInstanceOf(AgentFatalError);
      expect((err as AgentFatalError).reason).toBe('token_expired');
      expect((err as AgentFatalError).message).toMatch(/token expired at .* must enroll again/);
    } finally {
      await server.close();
      await dir.remove();
    }
  });
});
