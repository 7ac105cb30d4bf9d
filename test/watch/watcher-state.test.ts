import { describe, expect, it } from 'vitest';
import { transition, TRANSITIONS, type Flow, type Phase, type Read, type WatcherState } from '../../src/server/watch/watcher-state.js';

const PHASES: readonly Phase[] = ['listing', 'catching-up', 'in-ring', 'confirming', 'confirmed', 'live', 'closed'];
const FLOWS: readonly Flow[] = ['open', 'paused', 'gated'];
const READS: readonly Read[] = ['idle', 'reading', 'reading-again'];

/** The diagram in watcher-state.ts, edge by edge. */
const ALLOWED: readonly (readonly [WatcherState, WatcherState])[] = [
  ['listing', 'in-ring'],
  ['listing', 'catching-up'],
  ['catching-up', 'in-ring'],
  ['catching-up', 'live'],
  ['in-ring', 'catching-up'],
  ['in-ring', 'confirming'],
  ['in-ring', 'live'],
  ['confirming', 'confirmed'],
  ['confirming', 'catching-up'],
  ['confirming', 'live'],
  ['confirmed', 'catching-up'],
  ['confirmed', 'live'],
  ...PHASES.filter((p) => p !== 'closed').map((p) => [p, 'closed'] as const),
  ['open', 'paused'],
  ['paused', 'open'],
  ['open', 'gated'],
  ['gated', 'open'],
  ['idle', 'reading'],
  ['reading', 'reading-again'],
  ['reading', 'idle'],
  ['reading-again', 'idle'],
];

const allowed = (from: WatcherState, to: WatcherState): boolean => ALLOWED.some(([f, t]) => f === from && t === to);
/** Calls the overload that fits the pair: a phase, flow or read transition. */
function step(from: WatcherState, to: WatcherState): WatcherState {
  const isPhase = (s: WatcherState): s is Phase => (PHASES as readonly WatcherState[]).includes(s);
  const isFlow = (s: WatcherState): s is Flow => (FLOWS as readonly WatcherState[]).includes(s);
  const isRead = (s: WatcherState): s is Read => (READS as readonly WatcherState[]).includes(s);
  if (isPhase(from) && isPhase(to)) return transition(from, to);
  if (isFlow(from) && isFlow(to)) return transition(from, to);
  if (isRead(from) && isRead(to)) return transition(from, to);
  throw new Error(`${from} and ${to} are not states of one machine`);
}

describe('the watcher state machine', () => {
  it('has exactly the transitions of its diagram', () => {
    const table = Object.entries(TRANSITIONS).flatMap(([from, tos]) => tos.map((to) => `${from} -> ${to}`));
    expect(table.sort()).toEqual(ALLOWED.map(([f, t]) => `${f} -> ${t}`).sort());
  });

  it('accepts every allowed transition', () => {
    for (const [from, to] of ALLOWED) expect(step(from, to)).toBe(to);
  });

  it('refuses every other move within a machine, staying put included', () => {
    let refused = 0;
    for (const machine of [PHASES, FLOWS, READS] as readonly (readonly WatcherState[])[]) {
      for (const from of machine) {
        for (const to of machine) {
          if (allowed(from, to)) continue;
          expect(() => step(from, to), `${from} -> ${to}`).toThrow(`no transition from ${from} to ${to}`);
          refused++;
        }
      }
    }
    expect(refused).toBe(7 * 7 - 18 + (3 * 3 - 4) + (3 * 3 - 4));
  });

  it('ends at closed, and only once', () => {
    expect(TRANSITIONS.closed).toEqual([]);
    expect(() => transition('closed', 'live')).toThrow();
    expect(() => transition('live', 'catching-up')).toThrow();
    expect(() => transition('paused', 'gated')).toThrow();
  });
});
