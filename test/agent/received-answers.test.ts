/**
 * Answers and requests the agent receives outside the watch (issue 36):
 * an enrollment answer that fails its schema stops the agent with nothing
 * saved; a tunnel request whose frame or params fail theirs is answered
 * `validation_failed` without running its method.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { AgentFatalError, StateDir } from '../../src/agent/index.js';
import { ensureEnrolled } from '../../src/agent/identity/enrollment.js';
import { AgentMethodRegistry } from '../../src/agent/tunnel/method-registry.js';
import { RequestRunner } from '../../src/agent/tunnel/request-runner.js';
import { TunnelClient } from '../../src/agent/tunnel/index.js';
import { checkNoParams } from '../../src/agent/received/index.js';
import type { FetchLike } from '../../src/client/index.js';
import { AGENT_METHODS, type TunnelRequest } from '../../src/protocol/index.js';
import { enrolledDevice } from './support/enrollment-answer.js';

const ORG = '00000000-0000-4000-8000-0000000000aa';
const silent = pino({ level: 'silent' });
const dirs: string[] = [];
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

async function enrollAgainst(answer: (publicKey: string) => Record<string, unknown>): Promise<{ result: unknown; stateDir: StateDir }> {
  const dir = await mkdtemp(join(tmpdir(), 'fp-answers-'));
  dirs.push(dir);
  const stateDir = new StateDir(dir);
  const { keys } = await stateDir.loadOrCreateKeyPair();
  const fetch: FetchLike = async () => new Response(JSON.stringify(answer(keys.publicKey)), { status: 201, headers: { 'content-type': 'application/json' } });
  const input = { stateDir, server: 'http://fleet.test', org: ORG, registrationKey: 'fpr_key', hostname: 'h', endpoints: [], logger: silent, fetch };
  const result = await ensureEnrolled(input, new AbortController().signal).catch((err: unknown) => err);
  return { result, stateDir };
}

describe('enrollment answers', () => {
  it('a valid answer is saved as the identity', async () => {
    const { result, stateDir } = await enrollAgainst((pk) => enrolledDevice(pk));
    expect(result).not.toBeInstanceOf(Error);
    expect((await stateDir.loadIdentity())?.device_id).toBe('00000000-0000-4000-8000-000000000001');
  });

  const invalid: [string, (pk: string) => Record<string, unknown>, RegExp][] = [
    ['an id with a line break', (pk) => enrolledDevice(pk, { id: '00000000-0000-4000-8000-000000000001\nPostUp = x' }), /\/id must match format "uuid"/],
    ['a device token with a line break', (pk) => enrolledDevice(pk, { device_token: 'fpd_x\nX-Other: y' }), /\/device_token is not a token/],
    ['a number for the organization', (pk) => enrolledDevice(pk, { organization_id: 7 }), /\/organization_id must be string/],
    ['another public key', () => enrolledDevice('zo060cy2M+x7cMF4FKXHbs0CloUFDTRHRboFhw5YfVk='), /another organization or public key/],
  ];
  it.each(invalid)('an answer with %s stops the agent (enrollment_refused) and saves nothing', async (_name, answer, problem) => {
    const { result, stateDir } = await enrollAgainst(answer);
    expect(result).toBeInstanceOf(AgentFatalError);
    expect((result as AgentFatalError).reason).toBe('enrollment_refused');
    expect((result as AgentFatalError).message).toMatch(problem);
    expect(await stateDir.loadIdentity()).toBeUndefined();
  });
});

describe('tunnel requests', () => {
  function runner(): { run: (req: TunnelRequest) => ReturnType<RequestRunner['run']>; calls: () => number } {
    let calls = 0;
    const registry = new AgentMethodRegistry();
    registry.register('counted', async () => ++calls, checkNoParams);
    registry.register('free', async (params) => params);
    const r = new RequestRunner(registry, { maxConcurrent: 4, maxQueued: 4 }, silent);
    return { run: (req) => r.run(req), calls: () => calls };
  }
  const req = (over: Partial<TunnelRequest>): TunnelRequest => ({ id: '1', method: 'counted', params: {}, deadline_ms: 1_000, ...over });

  it('runs a method whose params pass its check', async () => {
    const r = runner();
    expect(await r.run(req({}))).toEqual({ id: '1', result: 1 });
    expect(await r.run(req({ method: 'free', params: { any: ['thing'] } }))).toEqual({ id: '1', result: { any: ['thing'] } });
  });

  const refused: [string, Partial<TunnelRequest>, RegExp][] = [
    ['params a method takes none of', { params: { x: 1 } }, /the params of counted: \(the object\) must NOT have additional properties/],
    ['a deadline no timer holds', { deadline_ms: 1e12 }, /\/deadline_ms must be <= 2147483647/],
    ['a deadline that is not an integer', { deadline_ms: 1.5 }, /\/deadline_ms must be integer/],
    ['a method name outside the pattern', { method: 'counted\nx' }, /\/method must match pattern/],
  ];
  it.each(refused)('answers validation_failed to %s, without running it', async (_name, over, message) => {
    const r = runner();
    const answer = await r.run(req(over));
    expect(answer).toMatchObject({ id: '1', error: { code: 'validation_failed' } });
    expect('error' in answer ? answer.error.message : '').toMatch(message);
    expect(r.calls()).toBe(0);
  });

  it('the built-in methods take no params', async () => {
    const client = new TunnelClient({ url: 'http://fleet.test', token: 'fpd_x', revision: () => 3, logger: silent });
    const r = new RequestRunner(client.methods, { maxConcurrent: 1, maxQueued: 1 }, silent);
    expect(await r.run(req({ method: AGENT_METHODS.ping }))).toEqual({ id: '1', result: { pong: true, revision: 3 } });
    expect(await r.run(req({ method: AGENT_METHODS.ping, params: { revision: 9 } }))).toMatchObject({ error: { code: 'validation_failed' } });
  });
});
