import { describe, expect, it } from 'vitest';
import { PeerPath, type PathContext, type PeerReading } from '../../../src/agent/paths/index.js';
import { PATH_HANDSHAKE_STALE_MS, PATH_STALL_MS, PATH_TRIAL_MS, PATH_UPGRADE_PERIOD_MS } from '../../../src/protocol/index.js';

const RELAY = '127.0.0.1:40000';
const ctx = (now: number, relayUp = true): PathContext => ({ now, relayUp, isRelayEndpoint: (e) => e === RELAY });
const reading = (over: Partial<PeerReading> = {}): PeerReading => ({ endpoint: null, latest_handshake: 0, rx_bytes: 0, tx_bytes: 0, ...over });

/** A peer path with candidates, started at t = 0. */
function peer(candidates: string[]): PeerPath {
  const p = new PeerPath('peer-key', 'own-key', 0);
  p.setCandidates(candidates);
  return p;
}

describe('PeerPath: each candidate in order, judged by a handshake, then the relay', () => {
  it('tries the first candidate at once and keeps it when a handshake completes', () => {
    const p = peer(['198.51.100.1:1', '198.51.100.2:2']);
    const first = p.observe(reading(), ctx(0));
    expect(first).toMatchObject({ type: 'try-direct', index: 0, restun: false });
    p.started(first, 0);
    expect(p.observe(reading({ endpoint: '198.51.100.1:1' }), ctx(1_000))).toEqual({ type: 'keep' });
    expect(p.observe(reading({ endpoint: '198.51.100.1:1', latest_handshake: 2 }), ctx(2_000))).toEqual({ type: 'keep' });
    expect(p.confirmed).toBe(0);
    expect(p.kind(reading({ endpoint: '198.51.100.1:1', latest_handshake: 2 }), ctx(2_000))).toBe('direct');
  });

  it('moves on after PATH_TRIAL_MS without a handshake, and to the relay after the last candidate', () => {
    const p = peer(['198.51.100.1:1', '198.51.100.2:2']);
    p.started(p.observe(reading(), ctx(0)), 0);
    expect(p.observe(reading(), ctx(PATH_TRIAL_MS - 1))).toEqual({ type: 'keep' });
    const second = p.observe(reading(), ctx(PATH_TRIAL_MS));
    expect(second).toMatchObject({ type: 'try-direct', index: 1, restun: false });
    p.started(second, PATH_TRIAL_MS);
    const relay = p.observe(reading(), ctx(2 * PATH_TRIAL_MS));
    expect(relay).toMatchObject({ type: 'try-relay', restun: false });
    p.started(relay, 2 * PATH_TRIAL_MS);
    expect(p.observe(reading({ endpoint: RELAY, latest_handshake: 13 }), ctx(2 * PATH_TRIAL_MS + 500))).toEqual({ type: 'keep' });
    expect(p.confirmed).toBe(-1);
    expect(p.kind(reading({ endpoint: RELAY, latest_handshake: 13 }), ctx(13_000))).toBe('relay');
  });

  it('without candidates goes to the relay at once; without a relay it waits, longer after each failed round', () => {
    const p = peer([]);
    expect(p.observe(reading(), ctx(0))).toMatchObject({ type: 'try-relay', restun: false });
    const lone = peer(['198.51.100.1:1']);
    lone.started(lone.observe(reading(), ctx(0, false)), 0);
    expect(lone.observe(reading(), ctx(PATH_TRIAL_MS, false))).toEqual({ type: 'keep', restun: false });
    // The round failed: nothing until the first retry delay (10 s) passed.
    expect(lone.observe(reading(), ctx(PATH_TRIAL_MS + 9_000, false))).toEqual({ type: 'keep' });
    const again = lone.observe(reading(), ctx(PATH_TRIAL_MS + 10_000, false));
    expect(again).toMatchObject({ type: 'try-direct', index: 0, restun: false });
    lone.started(again, PATH_TRIAL_MS + 10_000);
    lone.observe(reading(), ctx(2 * PATH_TRIAL_MS + 10_000, false));
    // Second failure: twice as long.
    expect(lone.observe(reading(), ctx(2 * PATH_TRIAL_MS + 10_000 + 19_000, false))).toEqual({ type: 'keep' });
    expect(lone.observe(reading(), ctx(2 * PATH_TRIAL_MS + 10_000 + 20_000, false)).type).toBe('try-direct');
  });

  it('a trial decided before the candidates changed starts nothing: the next reading tries the new first candidate', () => {
    const p = peer(['192.168.2.10:51820']);
    const stale = p.observe(reading(), ctx(0));
    // Setting WireGuard waited behind an apply that brought the peer's STUN address.
    p.setCandidates(['203.0.113.102:21306']);
    p.started(stale, 100);
    expect(p.trial).toBeNull();
    const fresh = p.observe(reading(), ctx(200));
    expect(fresh).toMatchObject({ type: 'try-direct', index: 0 });
    p.started(fresh, 200);
    expect(p.trial).toEqual({ index: 0, startedAt: 200 });
  });

  it('starts over from the first candidate when the peer publishes other endpoints', () => {
    const p = peer(['198.51.100.1:1']);
    p.started(p.observe(reading(), ctx(0)), 0);
    p.observe(reading({ latest_handshake: 1 }), ctx(1_000));
    expect(p.setCandidates(['198.51.100.1:1'])).toBe(false);
    expect(p.setCandidates(['198.51.100.7:7'])).toBe(true);
    expect(p.observe(reading({ latest_handshake: 1 }), ctx(2_000))).toMatchObject({ type: 'try-direct', index: 0, restun: false });
  });
});

describe('PeerPath: a working path is kept, a broken one replaced', () => {
  /** A peer confirmed direct at t = 1 s. */
  function direct(): PeerPath {
    const p = peer(['198.51.100.1:1']);
    p.started(p.observe(reading(), ctx(0)), 0);
    p.observe(reading({ endpoint: '198.51.100.1:1', latest_handshake: 1 }), ctx(1_000));
    return p;
  }

  it('an idle pair exchanging keepalives every 25 s is never broken', () => {
    const p = direct();
    let rx = 0;
    let tx = 0;
    for (let t = 2_000; t < 120_000; t += 1_000) {
      // This side's keepalive at 25 s intervals, the other's 12 s later.
      if (t % 25_000 === 0) tx += 32;
      if ((t + 12_000) % 25_000 === 0) rx += 32;
      expect(p.observe(reading({ endpoint: '198.51.100.1:1', latest_handshake: 1, rx_bytes: rx, tx_bytes: tx }), ctx(t))).toEqual({ type: 'keep' });
    }
  });

  it('packets sent and nothing received for PATH_STALL_MS: broken, STUN again, candidates from the first', () => {
    const p = direct();
    let tx = 0;
    let decision = p.observe(reading({ endpoint: '198.51.100.1:1', latest_handshake: 1, rx_bytes: 100, tx_bytes: tx }), ctx(2_000));
    let t = 2_000;
    while (decision.type === 'keep' && t < 60_000) {
      t += 1_000;
      tx += 100;
      decision = p.observe(reading({ endpoint: '198.51.100.1:1', latest_handshake: 1, rx_bytes: 100, tx_bytes: tx }), ctx(t));
    }
    expect(decision).toMatchObject({ type: 'try-direct', index: 0, restun: true });
    expect(t - 2_000).toBeGreaterThanOrEqual(PATH_STALL_MS);
    expect(t - 2_000).toBeLessThanOrEqual(PATH_STALL_MS + 1_000);
  });

  it('no handshake for PATH_HANDSHAKE_STALE_MS: broken', () => {
    const p = direct();
    const at = 1_000 + PATH_HANDSHAKE_STALE_MS + 1;
    expect(p.observe(reading({ endpoint: '198.51.100.1:1', latest_handshake: 1 }), ctx(at))).toMatchObject({ type: 'try-direct', index: 0, restun: true });
  });

  it('a relayed pair with direct candidates tries them once per upgrade slot, the same slots for both ends', () => {
    const a = new PeerPath('key-a', 'key-b', 0);
    const b = new PeerPath('key-b', 'key-a', 0);
    const trials: number[][] = [[], []];
    for (const [i, p] of [a, b].entries()) {
      p.setCandidates(['198.51.100.1:1']);
      p.started({ type: 'try-relay', restun: false }, 0);
      p.observe(reading({ endpoint: RELAY, latest_handshake: 1 }), ctx(1_000));
      for (let t = 2_000; t < 3 * PATH_UPGRADE_PERIOD_MS; t += 1_000) {
        const d = p.observe(reading({ endpoint: RELAY, latest_handshake: Math.floor(t / 1000) - 1, rx_bytes: t, tx_bytes: t }), ctx(t));
        if (d.type === 'try-direct') trials[i]?.push(t);
      }
    }
    expect(trials[0]?.length).toBeGreaterThanOrEqual(2);
    expect(trials[0]).toEqual(trials[1]);
    const [first = 0, second = 0] = trials[0] ?? [];
    expect(second - first).toBe(PATH_UPGRADE_PERIOD_MS);
  });

  it('a relayed pair without direct candidates is never tried', () => {
    const p = peer([]);
    p.started(p.observe(reading(), ctx(0)), 0);
    p.observe(reading({ endpoint: RELAY, latest_handshake: 1 }), ctx(1_000));
    for (let t = 2_000; t < 2 * PATH_UPGRADE_PERIOD_MS; t += 5_000) {
      expect(p.observe(reading({ endpoint: RELAY, latest_handshake: Math.floor(t / 1000) - 1, rx_bytes: t, tx_bytes: t }), ctx(t))).toEqual({ type: 'keep' });
    }
  });
});
