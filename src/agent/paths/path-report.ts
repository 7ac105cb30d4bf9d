/**
 * When the agent reports its paths, and what (docs/protocol.md "Path
 * reports"): at once on a change of path, via or endpoint; otherwise at most
 * every 30 s, and only when a peer carried more than keepalives.
 */
import { MAX_REPORTED_PEERS, PATH_REPORT_BYTES, PATH_REPORT_INTERVAL_MS, type PeerPath } from '../../protocol/index.js';
import type { DesiredPeer, WgPeerState } from '../dataplane/index.js';

export interface PeerObservation {
  desired: Pick<DesiredPeer, 'public_key' | 'device_id'>;
  reading: WgPeerState | undefined;
  kind: 'direct' | 'relay' | 'none';
  /** `device:<id>` for a device reached through the relay device; default the server relay when relayed. */
  via?: string;
}

export interface ReportContext {
  relayId: string | null;
  isRelayEndpoint: (endpoint: string | null) => boolean;
  now: number;
}

export interface PathReport {
  peers: PeerPath[];
  peers_truncated: boolean;
}

export class PathReporter {
  #shape = '';
  #bytes = new Map<string, number>();
  #lastAt = -Infinity;

  /** The report to send now, or undefined when none is due. */
  update(observations: readonly PeerObservation[], ctx: ReportContext): PathReport | undefined {
    const peers = observations.map((o): PeerPath => {
      const r = o.reading;
      const relayed = o.kind === 'relay' || o.via !== undefined;
      const byServer = relayed && o.via === undefined;
      return {
        public_key: o.desired.public_key,
        device_id: o.desired.device_id,
        path: o.kind,
        via: relayed ? (o.via ?? 'server') : null,
        relay_id: byServer ? ctx.relayId : null,
        endpoint: relayed || r === undefined || ctx.isRelayEndpoint(r.endpoint) ? null : r.endpoint,
        latest_handshake: r && r.latest_handshake > 0 ? new Date(r.latest_handshake * 1000).toISOString() : null,
        rx_bytes: r?.rx_bytes ?? 0,
        tx_bytes: r?.tx_bytes ?? 0,
      };
    });
    // Most recently active first, so the cap keeps the peers that matter.
    peers.sort((a, b) => (b.latest_handshake ?? '').localeCompare(a.latest_handshake ?? '') || a.public_key.localeCompare(b.public_key));
    const shape = peers.map((p) => `${p.public_key} ${p.path} ${p.via ?? ''} ${p.relay_id ?? ''} ${p.endpoint ?? ''}`).sort().join('\n');
    const changed = shape !== this.#shape;
    const busy = ctx.now - this.#lastAt >= PATH_REPORT_INTERVAL_MS && peers.some((p) => p.rx_bytes + p.tx_bytes - (this.#bytes.get(p.public_key) ?? 0) > PATH_REPORT_BYTES);
    if (!changed && !busy) return undefined;
    this.#shape = shape;
    this.#lastAt = ctx.now;
    this.#bytes = new Map(peers.map((p) => [p.public_key, p.rx_bytes + p.tx_bytes]));
    return { peers: peers.slice(0, MAX_REPORTED_PEERS), peers_truncated: peers.length > MAX_REPORTED_PEERS };
  }
}
