import { describe, expect, it } from 'vitest';
import { EventRing, type CachedEvent } from '../../src/server/watch/event-ring.js';

function ev(revision: number): CachedEvent {
  return { revision, kind: 'device', deleted: false, bytes: Buffer.from(String(revision)) };
}

function revisions(ring: EventRing): number[] {
  return Array.from({ length: ring.size }, (_, i) => ring.at(i).revision);
}

describe('EventRing', () => {
  it('starts empty at the head it was made with and covers positions from there', () => {
    const ring = new EventRing(4, 10);
    expect([ring.start, ring.head, ring.size]).toEqual([10, 10, 0]);
    expect(ring.covers(10)).toBe(true);
    expect(ring.covers(11)).toBe(true);
    expect(ring.covers(9)).toBe(false);
    expect(ring.indexAfter(10)).toBe(0);
  });

  it('keeps events in order and moves the head', () => {
    const ring = new EventRing(4, 10);
    for (const r of [11, 13, 14]) ring.push(ev(r));
    expect(revisions(ring)).toEqual([11, 13, 14]);
    expect([ring.start, ring.head]).toEqual([10, 14]);
  });

  it('refuses an event that is not after the head', () => {
    const ring = new EventRing(4, 10);
    ring.push(ev(12));
    expect(() => ring.push(ev(12))).toThrow();
    expect(() => ring.push(ev(11))).toThrow();
    expect(revisions(ring)).toEqual([12]);
  });

  it('evicts the oldest event when full and moves start to it', () => {
    const ring = new EventRing(3, 0);
    for (const r of [1, 2, 3]) ring.push(ev(r));
    expect(ring.start).toBe(0);
    ring.push(ev(5));
    // Revision 1 is gone: the ring knows every change in (1, 5].
    expect(revisions(ring)).toEqual([2, 3, 5]);
    expect(ring.start).toBe(1);
    expect(ring.covers(0)).toBe(false);
    expect(ring.covers(1)).toBe(true);
    for (const r of [6, 7, 9, 10]) ring.push(ev(r));
    expect(revisions(ring)).toEqual([7, 9, 10]);
    expect([ring.start, ring.head, ring.size]).toEqual([6, 10, 3]);
  });

  it('finds the first event after a position (indexAfter), across wrap-around', () => {
    const ring = new EventRing(4, 0);
    for (const r of [2, 4, 6, 8, 10, 12]) ring.push(ev(r));
    expect(revisions(ring)).toEqual([6, 8, 10, 12]);
    expect(ring.indexAfter(4)).toBe(0);
    expect(ring.indexAfter(5)).toBe(0);
    expect(ring.indexAfter(6)).toBe(1);
    expect(ring.indexAfter(7)).toBe(1);
    expect(ring.indexAfter(11)).toBe(3);
    expect(ring.indexAfter(12)).toBe(4);
    expect(ring.indexAfter(100)).toBe(4);
  });

  it('rejects indexes outside the events it holds', () => {
    const ring = new EventRing(4, 0);
    ring.push(ev(1));
    expect(() => ring.at(1)).toThrow(RangeError);
    expect(() => ring.at(-1)).toThrow(RangeError);
  });

  it('advance moves the head without an event; start follows only when the ring is empty', () => {
    const ring = new EventRing(4, 10);
    ring.advance(12);
    expect([ring.start, ring.head]).toEqual([12, 12]);
    ring.advance(11);
    expect(ring.head).toBe(12);
    ring.push(ev(13));
    ring.advance(15);
    expect([ring.start, ring.head, ring.size]).toEqual([12, 15, 1]);
    // A later event must come after the advanced head.
    expect(() => ring.push(ev(14))).toThrow();
    ring.push(ev(16));
    expect(revisions(ring)).toEqual([13, 16]);
  });

  it('with capacity 0 holds nothing and covers only the head', () => {
    const ring = new EventRing(0, 5);
    expect(ring.covers(5)).toBe(true);
    ring.push(ev(6));
    ring.push(ev(8));
    expect([ring.size, ring.start, ring.head]).toEqual([0, 8, 8]);
    expect(ring.covers(7)).toBe(false);
    expect(ring.covers(8)).toBe(true);
    expect(ring.indexAfter(8)).toBe(0);
    ring.advance(9);
    expect([ring.start, ring.head]).toEqual([9, 9]);
  });
});
