import { chmod, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AgentFatalError, StateDir, StateDirError, type DeviceIdentity } from '../../src/agent/index.js';
import { publicKeyFromPrivate } from '../../src/agent/dataplane/index.js';
import { ensureEnrolled } from '../../src/agent/identity/enrollment.js';

const silent = pino({ level: 'silent' });
let dir: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'fp-state-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const mode = async (path: string): Promise<number> => (await stat(path)).mode & 0o777;

function identity(publicKey: string, over: Partial<DeviceIdentity> = {}): DeviceIdentity {
  return {
    device_id: '00000000-0000-4000-8000-000000000001',
    organization_id: '00000000-0000-4000-8000-0000000000aa',
    device_token: 'fpd_secret',
    public_key: publicKey,
    server: 'http://192.0.2.10:8080',
    enrolled_at: '2026-01-01T00:00:00.000Z',
    ...over,
  };
}

describe('the state directory', () => {
  it('creates a 0700 directory and a 0600 private key once, then reuses the key', async () => {
    const sd = new StateDir(join(dir, 'nested', 'state'));
    await sd.ensure();
    expect(await mode(sd.path)).toBe(0o700);
    const first = await sd.loadOrCreateKeyPair();
    expect(first.created).toBe(true);
    expect(await mode(sd.privateKeyPath)).toBe(0o600);
    expect((await readFile(sd.privateKeyPath, 'utf8')).trim()).toBe(first.keys.privateKey);
    expect(first.keys.publicKey).toBe(publicKeyFromPrivate(first.keys.privateKey));

    const again = await new StateDir(sd.path).loadOrCreateKeyPair();
    expect(again).toEqual({ keys: first.keys, created: false, narrowed: false });
  });

  it('narrows a key file readable by others to 0600', async () => {
    const sd = new StateDir(dir);
    await sd.loadOrCreateKeyPair();
    await chmod(sd.privateKeyPath, 0o644);
    const loaded = await sd.loadOrCreateKeyPair();
    expect(loaded.narrowed).toBe(true);
    expect(await mode(sd.privateKeyPath)).toBe(0o600);
  });

  it('refuses a key file that holds no key', async () => {
    const sd = new StateDir(dir);
    await writeFile(sd.privateKeyPath, 'not a key\n', { mode: 0o600 });
    await expect(sd.loadOrCreateKeyPair()).rejects.toThrow(StateDirError);
  });

  it('keeps the identity (0600) across instances; none before enrollment', async () => {
    const sd = new StateDir(dir);
    expect(await sd.loadIdentity()).toBeUndefined();
    const { keys } = await sd.loadOrCreateKeyPair();
    const id = identity(keys.publicKey);
    await sd.saveIdentity(id);
    expect(await mode(sd.identityPath)).toBe(0o600);
    expect(await new StateDir(dir).loadIdentity()).toEqual(id);
  });

  it('refuses a corrupt identity file', async () => {
    const sd = new StateDir(dir);
    await writeFile(sd.identityPath, '{"device_id": 1}');
    await expect(sd.loadIdentity()).rejects.toThrow(StateDirError);
    await writeFile(sd.identityPath, 'garbage');
    await expect(sd.loadIdentity()).rejects.toThrow(/not JSON/);
  });
});

describe('ensureEnrolled with a state directory', () => {
  const input = (over: Partial<Parameters<typeof ensureEnrolled>[0]> = {}) => ({
    stateDir: new StateDir(dir),
    server: undefined,
    org: undefined,
    registrationKey: undefined,
    hostname: 'h',
    endpoints: [],
    logger: silent,
    // Any network call is a test failure: a later start must not enroll again.
    fetch: () => Promise.reject(new Error('no network call expected')),
    ...over,
  });

  it('reuses a persisted identity without calling the server, with the configured server winning', async () => {
    const sd = new StateDir(dir);
    const { keys } = await sd.loadOrCreateKeyPair();
    await sd.saveIdentity(identity(keys.publicKey));
    const reused = await ensureEnrolled(input(), new AbortController().signal);
    expect(reused).toMatchObject({ enrolled: false, server: 'http://192.0.2.10:8080', keys });
    expect(reused.identity.device_token).toBe('fpd_secret');
    const moved = await ensureEnrolled(input({ server: 'http://192.0.2.11:8080' }), new AbortController().signal);
    expect(moved.server).toBe('http://192.0.2.11:8080');
  });

  it('refuses an identity of another organization, or of another key', async () => {
    const sd = new StateDir(dir);
    const { keys } = await sd.loadOrCreateKeyPair();
    await sd.saveIdentity(identity(keys.publicKey));
    await expect(ensureEnrolled(input({ org: '00000000-0000-4000-8000-0000000000bb' }), new AbortController().signal)).rejects.toMatchObject({
      name: 'AgentFatalError',
      reason: 'state_dir',
    });
    await sd.saveIdentity(identity('AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA='));
    await expect(ensureEnrolled(input(), new AbortController().signal)).rejects.toThrow(/another key/);
  });

  it('needs the server, organization and registration key for the first start', async () => {
    const err = await ensureEnrolled(input({ server: 'http://192.0.2.10:1' }), new AbortController().signal).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AgentFatalError);
    expect(err).toMatchObject({ reason: 'config' });
  });
});
