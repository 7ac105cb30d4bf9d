/**
 * The tunnels opened on a replica are announced in rounds (registry entry,
 * then `agent:<device>` signal): the first after a quiet spell at once, then
 * at most one round per spacing, each bounded, so a joining fleet costs a
 * registry message and a NOTIFY per round, not per tunnel.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { agentSignal } from '../../src/protocol/index.js';
import { MemoryBus } from '../../src/server/bus/index.js';
import { ANNOUNCED_PER_ROUND, AgentAnnouncer } from '../../src/server/gateway/agent-announcer.js';

interface Recorder {
  bus: MemoryBus;
  /** Each timer turn's signals, as one round. */
  rounds: string[][];
  /** Registry writes, in order, as `device` (settled) or `device?` (still in flight). */
  writes: string[];
  /** Settles every registry write in flight. */
  settle(): Promise<void>;
  announcer: AgentAnnouncer;
}

function recorder(): Recorder {
  const bus = new MemoryBus();
  const rounds: string[][] = [];
  const writes: string[] = [];
  const inFlight: (() => void)[] = [];
  let current: string[] | undefined;
  bus.notify = (name) => {
    if (!current) {
      const round: string[] = [];
      current = round;
      rounds.push(round);
      setTimeout(() => (current = undefined), 0);
    }
    current.push(name);
  };
  const register = (d: string): Promise<void> =>
    new Promise((resolve) => {
      const i = writes.push(`${d}?`) - 1;
      inFlight.push(() => {
        writes[i] = d;
        resolve();
      });
    });
  const settle = async (): Promise<void> => {
    for (const done of inFlight.splice(0)) done();
    await vi.advanceTimersByTimeAsync(0);
  };
  return { bus, rounds, writes, settle, announcer: new AgentAnnouncer({ bus, register, spacingMs: 250, now: () => Date.now() }) };
}

describe('AgentAnnouncer', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('announces the first device at once and the ones after it together one spacing later, each signal after its registry write', async () => {
    const r = recorder();
    r.announcer.opened('a');
    await vi.advanceTimersByTimeAsync(1);
    expect(r.writes).toEqual(['a?']);
    expect(r.rounds).toEqual([]);
    await r.settle();
    expect(r.rounds).toEqual([[agentSignal('a')]]);
    for (const d of ['b', 'c', 'b']) {
      r.announcer.opened(d);
      await vi.advanceTimersByTimeAsync(50);
    }
    expect(r.writes).toEqual(['a']);
    expect(r.announcer.pending).toBe(2);
    await vi.advanceTimersByTimeAsync(100);
    await r.settle();
    expect(r.writes).toEqual(['a', 'b', 'c']);
    expect(r.rounds).toEqual([[agentSignal('a')], [agentSignal('b'), agentSignal('c')]]);
    // Quiet for longer than the spacing: at once again.
    await vi.advanceTimersByTimeAsync(1_000);
    r.announcer.opened('d');
    await vi.advanceTimersByTimeAsync(1);
    await r.settle();
    expect(r.rounds[2]).toEqual([agentSignal('d')]);
  });

  it('announces at most a round\'s bound at a time, the rest in the rounds after', async () => {
    const r = recorder();
    const n = ANNOUNCED_PER_ROUND * 2 + 10;
    for (let i = 0; i < n; i++) r.announcer.opened(`d${i}`);
    await vi.advanceTimersByTimeAsync(1);
    await r.settle();
    expect(r.rounds.map((x) => x.length)).toEqual([ANNOUNCED_PER_ROUND]);
    for (let i = 0; i < 2; i++) {
      await vi.advanceTimersByTimeAsync(250);
      await r.settle();
    }
    expect(r.rounds.map((x) => x.length)).toEqual([ANNOUNCED_PER_ROUND, ANNOUNCED_PER_ROUND, 10]);
    expect(new Set(r.rounds.flat()).size).toBe(n);
    expect(r.writes).toHaveLength(n);
    expect(r.announcer.pending).toBe(0);
  });

  it('announces nothing once closed', async () => {
    const r = recorder();
    r.announcer.opened('a');
    await vi.advanceTimersByTimeAsync(1);
    await r.settle();
    r.announcer.opened('b');
    r.announcer.close();
    r.announcer.opened('c');
    await vi.advanceTimersByTimeAsync(1_000);
    await r.settle();
    expect(r.writes).toEqual(['a']);
    expect(r.rounds.flat()).toEqual([agentSignal('a')]);
  });
});
