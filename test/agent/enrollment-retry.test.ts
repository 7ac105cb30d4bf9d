/** Enrollment retries: a 503 with Retry-After holds the next attempt back at least that long (fake timers). */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { StateDir } from '../../src/agent/index.js';
import { ensureEnrolled } from '../../src/agent/identity/enrollment.js';
import type { FetchLike } from '../../src/client/index.js';
import { enrolledDevice } from './support/enrollment-answer.js';

const ORG = '00000000-0000-4000-8000-0000000000aa';
let dir: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'fp-enroll-'));
});
afterEach(async () => {
  vi.useRealTimers();
  await rm(dir, { recursive: true, force: true });
});

/** Advances fake time by `ms` in 1 ms steps, letting real I/O (the state directory) progress in between. */
async function step(ms: number): Promise<void> {
  for (let i = 0; i < ms; i++) {
    await vi.advanceTimersByTimeAsync(1);
    await new Promise((r) => setImmediate(r));
  }
}

describe('enrollment under Retry-After', () => {
  it('waits at least the Retry-After of a 503 before enrolling again', async () => {
    const sd = new StateDir(dir);
    const { keys } = await sd.loadOrCreateKeyPair();
    const calls: string[] = [];
    const fetch: FetchLike = async (url) => {
      calls.push(url);
      if (calls.length === 1) {
        return new Response('{"error":{"code":"unavailable","message":"busy"}}', { status: 503, headers: { 'content-type': 'application/json', 'retry-after': '2' } });
      }
      const device = enrolledDevice(keys.publicKey, { organization_id: ORG });
      return new Response(JSON.stringify(device), { status: 201, headers: { 'content-type': 'application/json' } });
    };
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const enrolled = ensureEnrolled(
      { stateDir: sd, server: 'http://fleet.test', org: ORG, registrationKey: 'fpr_key', hostname: 'h', endpoints: [], logger: pino({ level: 'silent' }), fetch },
      new AbortController().signal,
    );
    // Until the first attempt, only real I/O (the state directory, its lock) has to progress: fake time stands still.
    for (let i = 0; i < 200_000 && calls.length === 0; i++) {
      await vi.advanceTimersByTimeAsync(0);
      await new Promise((r) => setImmediate(r));
    }
    expect(calls).toHaveLength(1);
    // The enrollment backoff alone would allow a retry at once (full jitter from 0).
    await step(1_990);
    expect(calls).toHaveLength(1);
    await step(1_020);
    expect(calls).toHaveLength(2);
    vi.useRealTimers();
    expect((await enrolled).identity.device_id).toBe('00000000-0000-4000-8000-000000000001');
  });
});
