import { describe, expect, it } from 'vitest';
import { FAN_OUT_WINDOW, FanOutTimes } from '../../src/server/watch/fan-out-times.js';

describe('FanOutTimes: when each recent head reached the tail cache', () => {
  it('a revision is timed from the first head at or above it, never from before the cache existed', () => {
    const t = new FanOutTimes();
    t.reached('o', 10, 12, 1000); // changes 11 and 12 arrived in one fill
    t.reached('o', 12, 15, 2000);
    expect(t.timeOf('o', 10)).toBeUndefined(); // fanned out before this cache
    expect(t.timeOf('o', 11)).toBe(1000);
    expect(t.timeOf('o', 12)).toBe(1000);
    expect(t.timeOf('o', 13)).toBe(2000);
    expect(t.timeOf('o', 15)).toBe(2000);
    expect(t.timeOf('o', 16)).toBeUndefined(); // not fanned out yet
    expect(t.timeOf('other', 11)).toBeUndefined();
  });

  it('keeps the last FAN_OUT_WINDOW heads per organization and forgets an organization on request', () => {
    const t = new FanOutTimes();
    for (let head = 1; head <= FAN_OUT_WINDOW + 10; head++) t.reached('o', head - 1, head, head * 10);
    expect(t.timeOf('o', 10)).toBeUndefined();
    expect(t.timeOf('o', 11)).toBe(110);
    expect(t.timeOf('o', FAN_OUT_WINDOW + 10)).toBe((FAN_OUT_WINDOW + 10) * 10);
    // A head that does not move forward is not a fan-out.
    t.reached('o', FAN_OUT_WINDOW + 10, FAN_OUT_WINDOW + 10, 99_999);
    expect(t.timeOf('o', FAN_OUT_WINDOW + 10)).toBe((FAN_OUT_WINDOW + 10) * 10);
    t.forget('o');
    expect(t.timeOf('o', FAN_OUT_WINDOW + 10)).toBeUndefined();
  });
});
