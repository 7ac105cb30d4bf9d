import pino from 'pino';
import { expect } from 'vitest';
import type { BusStats, ReliabilityOptions, SignalBus } from '../../src/server/bus/index.js';

export const silentLogger = pino({ level: process.env['TEST_LOG_LEVEL'] ?? 'silent' });

/** Short intervals for tests (the counts asserted never depend on them). */
export function testOptions(overrides: Partial<ReliabilityOptions> = {}): ReliabilityOptions {
  return { helloIntervalMs: 100, gapDelayMs: 50, logger: silentLogger, ...overrides };
}

/** Polls `condition` until it holds; fails with `what` after `timeoutMs`. */
export async function eventually(what: string, condition: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await condition()) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Lets pending setImmediate wake-ups run. */
export function settle(): Promise<void> {
  return new Promise((r) => setTimeout(r, 5));
}

/** Counts wake-ups per name on one bus. */
export class WakeRecorder {
  private readonly counts = new Map<string, number>();
  private readonly subs: { close(): void }[] = [];

  constructor(private readonly bus: SignalBus) {}

  watch(...names: string[]): this {
    for (const name of names) {
      this.counts.set(name, this.counts.get(name) ?? 0);
      this.subs.push(this.bus.subscribe(name, () => this.counts.set(name, (this.counts.get(name) ?? 0) + 1)));
    }
    return this;
  }

  count(name: string): number {
    return this.counts.get(name) ?? 0;
  }

  close(): void {
    for (const s of this.subs) s.close();
  }
}

/** A bus with counters, as the reliable drivers are. */
export type StatsBus = SignalBus & { readonly stats: Readonly<BusStats> };

/** Two replicas' buses; `send` issues a signal the way the store does on this driver. */
export interface BusPair {
  a: StatsBus;
  b: StatsBus;
  send(from: StatsBus, name: string): Promise<void>;
  close(): Promise<void>;
}

export type PairFactory = (a: Partial<ReliabilityOptions>, b: Partial<ReliabilityOptions>) => Promise<BusPair>;

let nameCounter = 0;
export function uniqueName(label: string): string {
  return `org:${label}-${process.pid}-${nameCounter++}`;
}

/** Sequence numbers found missing that never arrived. */
export function lostNumbers(stats: Readonly<BusStats>): number {
  return stats.gaps - stats.gapsFilled;
}

/** Waits until each bus has heard the other (so later counts exclude the first-contact wake-all). */
export async function warmUp(pair: BusPair): Promise<void> {
  await eventually('both buses know each other', () => pair.a.stats.publishers >= 2 && pair.b.stats.publishers >= 2);
  await settle();
}

/** The reliable-delivery conformance tests every driver must pass. */
export function reliableDeliveryTests(it: (name: string, fn: () => Promise<void>) => void, makePair: PairFactory): void {
  it('delivers a signal to every replica, the sender included, and wakes all on first contact', async () => {
    const pair = await makePair({}, {});
    try {
      await warmUp(pair);
      expect(pair.b.stats.resyncs['new-publisher']).toBe(1);
      const name = uniqueName('deliver');
      const atA = new WakeRecorder(pair.a).watch(name);
      const atB = new WakeRecorder(pair.b).watch(name);
      await pair.send(pair.a, name);
      await eventually('both replicas woken', () => atA.count(name) >= 1 && atB.count(name) >= 1);
    } finally {
      await pair.close();
    }
  });

  it('coalesces a burst of notifies into one message per name', async () => {
    const pair = await makePair({}, {});
    try {
      await warmUp(pair);
      const [x, y] = [uniqueName('burst'), uniqueName('burst')];
      const atB = new WakeRecorder(pair.b).watch(x, y);
      const sentBefore = pair.a.stats.signalsSent;
      const receivedBefore = pair.b.stats.signalsReceived;
      for (let i = 0; i < 100; i++) {
        pair.a.notify(x);
        pair.a.notify(y);
      }
      await eventually('both names woken', () => atB.count(x) >= 1 && atB.count(y) >= 1);
      await settle();
      expect(pair.a.stats.signalsSent - sentBefore).toBe(2);
      expect(pair.b.stats.signalsReceived - receivedBefore).toBe(2);
      expect([atB.count(x), atB.count(y)]).toEqual([1, 1]);
    } finally {
      await pair.close();
    }
  });

  it('detects every message dropped on the way out and still wakes every name', async () => {
    const pair = await makePair({ dropEvery: { outgoing: 3 } }, {});
    try {
      await warmUp(pair);
      const names = Array.from({ length: 30 }, () => uniqueName('drop-out'));
      const atB = new WakeRecorder(pair.b).watch(...names);
      for (const name of names) {
        await pair.send(pair.a, name);
        await settle();
      }
      await eventually('every name woken at the other replica', () => names.every((n) => atB.count(n) >= 1));
      // On PostgreSQL a hello may announce a number whose transaction is still
      // committing: that gap is filled when it arrives. Lost numbers stay missing.
      await eventually('every lost number detected', () => lostNumbers(pair.b.stats) >= 10);
      expect(pair.a.stats.droppedOutgoing).toBe(10);
      expect(pair.b.stats.signalsReceived).toBeGreaterThanOrEqual(20);
      // The 30th message was the last one: only a hello could reveal it.
      await eventually('a hello revealed a loss', () => pair.b.stats.resyncs.hello >= 1);
    } finally {
      await pair.close();
    }
  });

  it('detects every message dropped on arrival and still wakes every name', async () => {
    const pair = await makePair({}, { dropEvery: { incoming: 4 } });
    try {
      await warmUp(pair);
      const names = Array.from({ length: 20 }, () => uniqueName('drop-in'));
      const atB = new WakeRecorder(pair.b).watch(...names);
      for (const name of names) {
        await pair.send(pair.a, name);
        await settle();
      }
      await eventually('every name woken at the receiver', () => names.every((n) => atB.count(n) >= 1));
      await eventually('every lost number detected', () => lostNumbers(pair.b.stats) >= 5);
      expect(pair.b.stats.droppedIncoming).toBe(5);
      expect(pair.b.stats.resyncs.gap + pair.b.stats.resyncs.hello).toBeGreaterThanOrEqual(1);
    } finally {
      await pair.close();
    }
  });

  it('a hello reveals a lost last message', async () => {
    const pair = await makePair({ dropEvery: { outgoing: 5 } }, {});
    try {
      await warmUp(pair);
      const first = Array.from({ length: 4 }, () => uniqueName('before-last'));
      const last = uniqueName('last');
      const atB = new WakeRecorder(pair.b).watch(...first, last);
      for (const name of first) await pair.send(pair.a, name);
      await eventually('the first four arrive', () => first.every((n) => atB.count(n) >= 1));
      const hellosBefore = pair.b.stats.resyncs.hello;
      const lostBefore = lostNumbers(pair.b.stats);
      await pair.send(pair.a, last);
      // Nothing follows the lost message: only a hello can reveal it.
      await eventually('the lost last name is woken', () => atB.count(last) >= 1);
      expect(pair.a.stats.droppedOutgoing).toBe(1);
      expect(lostNumbers(pair.b.stats) - lostBefore).toBeGreaterThanOrEqual(1);
      expect(pair.b.stats.resyncs.hello - hellosBefore).toBeGreaterThanOrEqual(1);
    } finally {
      await pair.close();
    }
  });

  it('forgets a publisher that went silent', async () => {
    const pair = await makePair({}, { forgetAfterMs: 300 });
    try {
      await warmUp(pair);
      await pair.a.close();
      await eventually('the closed publisher is forgotten', () => pair.b.stats.publishers === 1);
    } finally {
      await pair.close();
    }
  });
}
