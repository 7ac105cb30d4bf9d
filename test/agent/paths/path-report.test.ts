import { describe, expect, it } from 'vitest';
import { PathReporter } from '../../../src/agent/paths/index.js';
import type { DesiredPeer, WgPeerState } from '../../../src/agent/dataplane/index.js';
import { PATH_REPORT_INTERVAL_MS } from '../../../src/protocol/index.js';

const KEY = 'a'.repeat(43) + '=';
const desired: DesiredPeer = { device_id: 'd2', hostname: 'h2', public_key: KEY, allowed_ips: ['100.64.0.2/32'], endpoint: null, candidates: [], persistent_keepalive: 25 };
const wg = (over: Partial<WgPeerState> = {}): WgPeerState => ({
  public_key: KEY, endpoint: '198.51.100.2:4000', allowed_ips: [], latest_handshake: 1_700_000_000, rx_bytes: 0, tx_bytes: 0, persistent_keepalive: 25, ...over,
});
const ctx = (now: number) => ({ relayId: 'replica-1', isRelayEndpoint: (e: string | null) => e === '127.0.0.1:9', now });

describe('PathReporter: a report on a change of path, otherwise at most every 30 s and only for traffic beyond keepalives', () => {
  it('reports a direct path with its endpoint and handshake, then nothing while only keepalives flow', () => {
    const r = new PathReporter();
    const first = r.update([{ desired, reading: wg(), kind: 'direct' }], ctx(0));
    expect(first?.peers).toEqual([{
      public_key: KEY, device_id: 'd2', path: 'direct', via: null, relay_id: null, endpoint: '198.51.100.2:4000',
      latest_handshake: new Date(1_700_000_000_000).toISOString(), rx_bytes: 0, tx_bytes: 0,
    }]);
    expect(first?.peers_truncated).toBe(false);
    expect(r.update([{ desired, reading: wg({ rx_bytes: 64, tx_bytes: 64 }), kind: 'direct' }], ctx(PATH_REPORT_INTERVAL_MS * 10))).toBeUndefined();
  });

  it('reports traffic after the interval, and a change of path at once', () => {
    const r = new PathReporter();
    r.update([{ desired, reading: wg(), kind: 'direct' }], ctx(0));
    expect(r.update([{ desired, reading: wg({ rx_bytes: 1e6 }), kind: 'direct' }], ctx(PATH_REPORT_INTERVAL_MS - 1))).toBeUndefined();
    expect(r.update([{ desired, reading: wg({ rx_bytes: 1e6 }), kind: 'direct' }], ctx(PATH_REPORT_INTERVAL_MS))?.peers[0]?.rx_bytes).toBe(1e6);
    const relayed = r.update([{ desired, reading: wg({ endpoint: '127.0.0.1:9', rx_bytes: 1e6 }), kind: 'relay' }], ctx(PATH_REPORT_INTERVAL_MS + 1));
    expect(relayed?.peers[0]).toMatchObject({ path: 'relay', via: 'server', relay_id: 'replica-1', endpoint: null });
  });
});
