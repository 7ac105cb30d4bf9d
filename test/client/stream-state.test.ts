import { describe, expect, it } from 'vitest';
import { transition, type InformerStatus, type InputType, type StatusType, type StreamInput } from '../../src/client/stream-state.js';
import { ChangeSignal } from '../../src/client/change-signal.js';

const error = new Error('x');
const states: { [S in StatusType]: Extract<InformerStatus, { type: S }> } = {
  starting: { type: 'starting' },
  syncing: { type: 'syncing' },
  synced: { type: 'synced' },
  retrying: { type: 'retrying', attempt: 1, error, delayMs: 10 },
  failed: { type: 'failed', error },
  stopped: { type: 'stopped' },
};
const inputs: { [I in InputType]: Extract<StreamInput, { type: I }> } = {
  opened: { type: 'opened', synced: false },
  progress: { type: 'progress', synced: true },
  disconnected: { type: 'disconnected', error, attempt: 2, delayMs: 20 },
  rejected: { type: 'rejected', error },
  aborted: { type: 'aborted' },
};

/** Every state × every input: a new state or input without a row here fails to compile. */
const TABLE: { [S in StatusType]: { [I in InputType]: StatusType } } = {
  starting: { opened: 'syncing', progress: 'starting', disconnected: 'retrying', rejected: 'failed', aborted: 'stopped' },
  syncing: { opened: 'syncing', progress: 'synced', disconnected: 'retrying', rejected: 'failed', aborted: 'stopped' },
  synced: { opened: 'syncing', progress: 'synced', disconnected: 'retrying', rejected: 'failed', aborted: 'stopped' },
  retrying: { opened: 'syncing', progress: 'retrying', disconnected: 'retrying', rejected: 'failed', aborted: 'stopped' },
  failed: { opened: 'failed', progress: 'failed', disconnected: 'failed', rejected: 'failed', aborted: 'failed' },
  stopped: { opened: 'stopped', progress: 'stopped', disconnected: 'stopped', rejected: 'stopped', aborted: 'stopped' },
};

describe('stream state machine', () => {
  for (const s of Object.keys(TABLE) as StatusType[]) {
    for (const i of Object.keys(TABLE[s]) as InputType[]) {
      it(`${s} + ${i} → ${TABLE[s][i]}`, () => {
        expect(transition(states[s], inputs[i]).type).toBe(TABLE[s][i]);
      });
    }
  }

  it('carries attempt, error and delay into retrying', () => {
    expect(transition(states.synced, inputs.disconnected)).toEqual({ type: 'retrying', attempt: 2, error, delayMs: 20 });
  });
});

describe('ChangeSignal', () => {
  it('coalesces any number of notifications into one wake-up per subscriber', async () => {
    const s = new ChangeSignal();
    const it1 = s.subscribe();
    for (let i = 0; i < 10; i++) s.notify();
    expect(await it1.next()).toEqual({ value: undefined, done: false });
    let second = false;
    const pending = it1.next().then(() => {
      second = true;
    });
    await new Promise((r) => setTimeout(r, 10));
    expect(second).toBe(false);
    s.notify();
    await pending;
    expect(second).toBe(true);
  });

  it('keeps a notification sent before the first next()', async () => {
    const s = new ChangeSignal();
    const it1 = s.subscribe();
    s.notify();
    expect((await it1.next()).done).toBe(false);
  });

  it('ends on abort and on close (after the pending notification)', async () => {
    const s = new ChangeSignal();
    const ac = new AbortController();
    const a = s.subscribe(ac.signal);
    const waiting = a.next();
    ac.abort();
    expect((await waiting).done).toBe(true);
    const b = s.subscribe();
    s.notify();
    s.close();
    expect((await b.next()).done).toBe(false);
    expect((await b.next()).done).toBe(true);
  });
});
