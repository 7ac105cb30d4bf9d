import { afterEach, describe, expect, it, vi } from 'vitest';
import { SilenceWatchdog } from '../../src/bench/load/silence-watchdog.js';

const dogs: SilenceWatchdog[] = [];
afterEach(() => {
  for (const d of dogs.splice(0)) d.stop();
});

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function watchdog(limitMs: number): { dog: SilenceWatchdog; fired: number[] } {
  const fired: number[] = [];
  const dog = new SilenceWatchdog(limitMs, () => fired.push(Date.now()));
  dogs.push(dog);
  return { dog, fired };
}

describe('bench silence watchdog', () => {
  it('fires once after the limit without hearing anything', async () => {
    const { dog, fired } = watchdog(100);
    dog.start();
    await sleep(350);
    expect(fired).toHaveLength(1);
  });

  it('is held off by hearing, and fires once hearing stops', async () => {
    const { dog, fired } = watchdog(150);
    dog.start();
    const started = Date.now();
    let lastHeard = started;
    while (Date.now() - started < 450) {
      dog.heard();
      lastHeard = Date.now();
      await sleep(30);
    }
    expect(fired).toHaveLength(0);
    await sleep(400);
    expect(fired).toHaveLength(1);
    expect((fired[0] ?? 0) - lastHeard).toBeGreaterThanOrEqual(140);
  });

  it('arms no timer per read: hearing only notes the time', () => {
    const { dog } = watchdog(60_000);
    dog.start();
    const timers = vi.spyOn(globalThis, 'setTimeout');
    try {
      for (let i = 0; i < 1_000; i++) dog.heard();
      expect(timers).not.toHaveBeenCalled();
    } finally {
      timers.mockRestore();
    }
  });

  it('never fires once stopped, and starts afresh', async () => {
    const { dog, fired } = watchdog(100);
    dog.start();
    dog.stop();
    await sleep(250);
    expect(fired).toHaveLength(0);
    dog.start();
    await sleep(250);
    expect(fired).toHaveLength(1);
  });
});
