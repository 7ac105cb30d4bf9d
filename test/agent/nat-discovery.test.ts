/**
 * The agent's STUN loop (NatDiscovery) with a scripted probe: when it
 * probes, what a changed, an unchanged and a lost mapping do to its state.
 */
import pino from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { NatDiscovery, StunTimeoutError, type NatMapping, type PortProbe, type StunState } from '../../src/agent/nat/index.js';
import { until } from './support/harness.js';

type Answer = NatMapping | Error;

const mapping = (endpoint: string, symmetric = false): NatMapping => ({ endpoint, symmetric, observed: [] });

function setup(opts: { intervalMs?: number; keepMs?: number; random?: () => number } = {}) {
  const answers: Answer[] = [];
  let clock = 0;
  const changes: StunState[] = [];
  const stats = { opened: 0, closed: 0, discovers: 0, servers: [] as string[] };
  const probe = (): PortProbe => ({
    async discover() {
      stats.discovers++;
      const next = answers.shift() ?? new StunTimeoutError('no answer');
      if (next instanceof Error) throw next;
      return next;
    },
    async close() {
      stats.closed++;
    },
  });
  const discovery = new NatDiscovery({
    host: 'stun.example',
    ports: [3478, 3479],
    wireguardPort: 51820,
    intervalMs: opts.intervalMs ?? 60_000,
    keepMs: opts.keepMs ?? 1_000,
    logger: pino({ level: 'silent' }),
    onChange: (s) => changes.push(s),
    resolve: async () => '203.0.113.1',
    open: async (server) => {
      stats.opened++;
      stats.servers.push(server);
      return probe();
    },
    now: () => clock,
    random: opts.random ?? (() => 0),
  });
  const stop = new AbortController();
  const done = discovery.run(stop.signal);
  stops.push(async () => {
    stop.abort();
    await done;
  });
  return { discovery, answers, changes, stats, advance: (ms: number) => (clock += ms), stop: async () => (stop.abort(), await done) };
}

const stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const s of stops.splice(0)) await s();
});

describe('NatDiscovery', () => {
  it('probes only once WireGuard runs, then publishes the mapping once', async () => {
    const { discovery, answers, changes, stats } = setup();
    answers.push(mapping('203.0.113.101:20001'));
    await new Promise((r) => setTimeout(r, 30));
    expect(stats.opened).toBe(0);
    expect(discovery.state).toEqual({ kind: 'pending' });
    discovery.wireguardRunning();
    await until(() => discovery.state.kind === 'mapped', 'the first mapping');
    expect(discovery.state).toEqual({ kind: 'mapped', endpoint: '203.0.113.101:20001', symmetric: false });
    expect(changes).toHaveLength(1);
    expect(stats.servers).toEqual(['203.0.113.1']);
  });

  it('a re-check that finds the same mapping changes nothing; a new one or a symmetric one is a change', async () => {
    const { discovery, answers, changes, stats } = setup();
    answers.push(mapping('203.0.113.101:20001'), mapping('203.0.113.101:20001'), mapping('203.0.113.101:20002'), mapping('203.0.113.101:20002', true));
    discovery.wireguardRunning();
    await until(() => stats.discovers === 1, 'the first probe');
    discovery.recheck();
    await until(() => stats.discovers === 2, 'the re-check');
    expect(changes).toHaveLength(1);
    discovery.recheck();
    await until(() => changes.length === 2, 'the new mapping');
    discovery.recheck();
    await until(() => changes.length === 3, 'the symmetric mapping');
    expect(changes.map((c) => (c.kind === 'mapped' ? [c.endpoint, c.symmetric] : c.kind))).toEqual([
      ['203.0.113.101:20001', false],
      ['203.0.113.101:20002', false],
      ['203.0.113.101:20002', true],
    ]);
    expect(stats.opened).toBe(1);
  });

  it.each([
    ['half', 0, 30_000],
    ['all', 0.9999, 60_000],
  ])('re-checks by itself after a wait drawn between half and all of the interval (%s)', async (_what, draw, waitMs) => {
    vi.useFakeTimers();
    try {
      const { discovery, answers, stats, stop } = setup({ intervalMs: 60_000, random: () => draw });
      answers.push(mapping('203.0.113.101:20001'), mapping('203.0.113.101:20003'));
      discovery.wireguardRunning();
      await vi.advanceTimersByTimeAsync(0);
      expect(stats.discovers).toBe(1);
      await vi.advanceTimersByTimeAsync(waitMs - 1_000);
      expect(stats.discovers).toBe(1);
      await vi.advanceTimersByTimeAsync(1_000);
      expect(stats.discovers).toBe(2);
      expect(discovery.state).toEqual({ kind: 'mapped', endpoint: '203.0.113.101:20003', symmetric: false });
      await stop();
    } finally {
      vi.useRealTimers();
    }
  });

  it('keeps the last mapping through unanswered probes for keepMs, then drops it and opens a new probe', async () => {
    const { discovery, answers, changes, stats, advance } = setup({ intervalMs: 20, keepMs: 10_000 });
    answers.push(mapping('203.0.113.101:20001'));
    discovery.wireguardRunning();
    await until(() => discovery.state.kind === 'mapped', 'the first mapping');
    // Unanswered probes within the keep window: the mapping stays.
    advance(5_000);
    await until(() => stats.discovers >= 3, 'failed re-checks', 5_000);
    expect(discovery.state.kind).toBe('mapped');
    expect(changes).toHaveLength(1);
    advance(5_000);
    await until(() => discovery.state.kind === 'off', 'the mapping to be dropped', 5_000);
    expect(changes.at(-1)).toEqual({ kind: 'off' });
    await until(() => stats.opened >= 2, 'a new probe', 5_000);
    expect(stats.closed).toBeGreaterThanOrEqual(1);
    // Answers again: mapped again.
    answers.push(mapping('203.0.113.101:20001'));
    await until(() => discovery.state.kind === 'mapped', 'the mapping back', 5_000);
  });

  it('goes from pending to off when the first probes are never answered for keepMs', async () => {
    const { discovery, stats, advance } = setup({ intervalMs: 20, keepMs: 1_000 });
    discovery.wireguardRunning();
    await until(() => stats.discovers >= 1, 'a probe');
    expect(discovery.state.kind).toBe('pending');
    advance(1_000);
    await until(() => discovery.state.kind === 'off', 'off', 5_000);
  });

  it('closes its probe when stopped', async () => {
    const { discovery, answers, stats, stop } = setup();
    answers.push(mapping('203.0.113.101:20001'));
    discovery.wireguardRunning();
    await until(() => discovery.state.kind === 'mapped', 'the first mapping');
    await stop();
    expect(stats.closed).toBe(1);
  });
});
