import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeBusMessage, encodeBusMessage } from '../../src/protocol/index.js';
import { createBus, MemoryBus } from '../../src/server/bus/index.js';
import { makeSettings } from '../../src/server/config/settings.js';
import type { Database } from '../../src/server/db/index.js';
import { Hub, HubBus } from './hub-bus.js';
import { eventually, settle, silentLogger, testOptions, uniqueName, WakeRecorder, type BusPair } from './bus-harness.js';
import { reliableDeliveryTests } from './bus-harness.js';

function hubPair(hub = new Hub()): { hub: Hub; a: HubBus; b: HubBus; close(): Promise<void> } {
  const a = HubBus.open(hub, testOptions());
  const b = HubBus.open(hub, testOptions());
  return { hub, a, b, close: async () => void (await Promise.all([a.close(), b.close()])) };
}

/** Until b knows a, and the wake-all of that first contact has run. */
async function warm(b: HubBus): Promise<void> {
  await eventually('warm', () => b.stats.publishers === 2);
  await settle();
}

function senderOf(payload: string): string | undefined {
  return decodeBusMessage(payload)?.publisher;
}

describe('bus message encoding', () => {
  it('round-trips every message and rejects what is not one', () => {
    fc.assert(
      fc.property(
        fc.stringMatching(/^[0-9a-f]{16}$/),
        fc.integer({ min: 1, max: 2 ** 40 }),
        fc.string({ minLength: 1, maxLength: 200 }),
        (publisher, seq, name) => {
          for (const m of [
            { type: 'signal', publisher, seq, name } as const,
            { type: 'all', publisher, seq } as const,
            { type: 'hello', publisher, seq } as const,
          ]) {
            expect(decodeBusMessage(encodeBusMessage(m))).toEqual(m);
          }
        },
      ),
    );
    for (const bad of ['', 'x', 's:abc', 's:abc:1', 's:ABC:1:n', 'h:abc:1:n', 'q:abc:1', 's:abc:0:n', 'h:abc:-1', 'a:abc:1.5']) {
      expect(decodeBusMessage(bad), bad).toBeUndefined();
    }
  });
});

describe('reliable bus over a lossy in-process transport', () => {
  reliableDeliveryTests(it, async (aOptions, bOptions) => {
    const hub = new Hub();
    const a = HubBus.open(hub, testOptions(aOptions));
    const b = HubBus.open(hub, testOptions(bOptions));
    const pair: BusPair = {
      a,
      b,
      send: async (from, name) => from.notify(name),
      close: async () => void (await Promise.all([a.close(), b.close()])),
    };
    return pair;
  });

  it('waits for a message that arrives late instead of waking everything', async () => {
    const hub = new Hub();
    // A window that can't expire during the test: the late message always makes it.
    const a = HubBus.open(hub, testOptions({ gapDelayMs: 60_000 }));
    const b = HubBus.open(hub, testOptions({ gapDelayMs: 60_000 }));
    try {
      await warm(b);
      const [late, next, bystander] = [uniqueName('late'), uniqueName('next'), uniqueName('bystander')];
      const atB = new WakeRecorder(b).watch(late, next, bystander);
      let release = (): void => {};
      const released = new Promise<void>((r) => (release = r));
      hub.route = (to, payload) => (to === b && payload.endsWith(late) ? { until: released } : 'deliver');
      a.notify(late);
      await settle();
      a.notify(next);
      await eventually('the later message arrives first', () => atB.count(next) === 1);
      expect(b.stats.gaps).toBe(1);
      expect(atB.count(late)).toBe(0);
      release();
      await eventually('the late one arrives', () => atB.count(late) === 1);
      expect(b.stats.gapsFilled).toBe(1);
      expect(b.stats.resyncs.gap).toBe(0);
      expect(atB.count(bystander)).toBe(0);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it('wakes everything when the listener reconnects, and adopts the next numbers without a gap', async () => {
    const { hub, a, b, close } = hubPair();
    try {
      await warm(b);
      const idle = uniqueName('idle');
      const atB = new WakeRecorder(b).watch(idle);
      hub.route = (to) => (to === b ? 'drop' : 'deliver');
      for (let i = 0; i < 3; i++) a.notify(uniqueName('during-outage'));
      await settle();
      hub.route = () => 'deliver';
      b.simulateReconnect();
      await eventually('wake-all after reconnect', () => atB.count(idle) === 1);
      a.notify(idle);
      await eventually('later signals arrive', () => atB.count(idle) === 2);
      expect(b.stats.resyncs.reconnect).toBe(1);
      expect(b.stats.gaps).toBe(0);
    } finally {
      await close();
    }
  });

  it('wakes a listener that reconnected before a failed send, once the sender can send again', async () => {
    const { hub, a, b, close } = hubPair();
    try {
      await warm(b);
      const lost = uniqueName('lost-after-reconnect');
      const atB = new WakeRecorder(b).watch(lost);
      // b's listener is back first (its wake-up reads the state before the change below)...
      b.simulateReconnect();
      await eventually('wake-all after reconnect', () => atB.count(lost) === 1);
      // ...then a's change is signalled while a's own connection is still down.
      const publish = hub.publish.bind(hub);
      hub.publish = async () => {
        throw new Error('publisher connection down');
      };
      a.notify(lost);
      await eventually('the send failed', () => a.stats.sendFailures > 0);
      hub.publish = publish;
      // b adopted a's numbers afresh, so the next hello's number shows it no gap: only an `all` can.
      await eventually('b woken for the lost change', () => atB.count(lost) === 2);
      expect(b.stats.allsReceived).toBe(1);
    } finally {
      await close();
    }
  });

  it('restarts a listener that stopped hearing its own messages', async () => {
    const { hub, a, b, close } = hubPair();
    try {
      await warm(b);
      let deaf = true;
      hub.route = (to) => (to === b && deaf ? 'drop' : 'deliver');
      b.onRestart = () => {
        deaf = false;
      };
      await eventually('deafness detected', () => b.listenerRestarts === 1);
      expect(b.stats.deafRestarts).toBe(1);
      expect(b.stats.resyncs.reconnect).toBe(1);
      const after = uniqueName('after-restart');
      const atB = new WakeRecorder(b).watch(after);
      a.notify(after);
      await eventually('delivery again', () => atB.count(after) >= 1);
      expect(a.stats.deafRestarts).toBe(0);
    } finally {
      await close();
    }
  });

  it('turns an overflowing queue into one wake-all message', async () => {
    const { a, b, close } = hubPair();
    try {
      await warm(b);
      const probe = uniqueName('overflow-probe');
      const atB = new WakeRecorder(b).watch(probe);
      const sentBefore = a.stats.signalsSent;
      for (let i = 0; i < 2000; i++) a.notify(uniqueName('many'));
      await eventually('wake-all received', () => b.stats.allsReceived === 1);
      await eventually('subscriber woken', () => atB.count(probe) === 1);
      expect(a.stats.overflows).toBe(1);
      expect(a.stats.signalsSent - sentBefore).toBe(1);
    } finally {
      await close();
    }
  });

  it('wakes local subscribers directly when sending fails', async () => {
    const hub = new Hub();
    // No idle hello during the test: exactly one send fails.
    const bus = HubBus.open(hub, testOptions({ helloIntervalMs: 60_000 }));
    try {
      const name = uniqueName('fail');
      const rec = new WakeRecorder(bus).watch(name);
      await eventually('announced', () => bus.stats.hellosSent === 1);
      hub.publish = async () => {
        throw new Error('transport down');
      };
      bus.notify(name);
      await eventually('woken despite the failure', () => rec.count(name) === 1);
      expect(bus.stats.sendFailures).toBe(1);
    } finally {
      await bus.close();
    }
  });

  it('property: whatever messages are lost or reordered, every notified name is eventually woken everywhere', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer({ min: 0, max: 5 }), { minLength: 1, maxLength: 12 }),
        fc.array(fc.constantFrom<'deliver' | 'drop' | 'delay'>('deliver', 'deliver', 'drop', 'delay'), { maxLength: 40 }),
        async (picks, fate) => {
          const hub = new Hub();
          const opts = testOptions({ helloIntervalMs: 50, gapDelayMs: 20 });
          const a = HubBus.open(hub, opts);
          const b = HubBus.open(hub, opts);
          try {
            await warm(b);
            const names = Array.from({ length: 6 }, () => uniqueName('prop'));
            const atB = new WakeRecorder(b).watch(...names);
            let i = 0;
            hub.route = (to, payload) => {
              if (to !== b || senderOf(payload) !== a.id) return 'deliver';
              const f = fate[i++] ?? 'deliver';
              return f === 'delay' ? { delayMs: 5 + (i % 3) * 15 } : f;
            };
            for (const p of picks) {
              a.notify(names[p]!);
              await settle();
            }
            const wanted = [...new Set(picks.map((p) => names[p]!))];
            await eventually('every notified name woken', () => wanted.every((n) => atB.count(n) >= 1));
          } finally {
            await Promise.all([a.close(), b.close()]);
          }
        },
      ),
      { numRuns: 15 },
    );
  });
});

describe('createBus', () => {
  it('builds the memory bus by default', async () => {
    const unused = async (): Promise<never> => {
      throw new Error('the memory bus must not use the database');
    };
    const db: Database = { kind: 'pglite', query: unused, transaction: unused, listen: unused, close: unused };
    const bus = await createBus(makeSettings({ memory: true }), db, silentLogger);
    expect(bus).toBeInstanceOf(MemoryBus);
    expect(bus.stats).toBeUndefined();
    await bus.close();
  });
});
