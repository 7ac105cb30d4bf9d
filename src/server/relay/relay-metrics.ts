import { Counter, Gauge, type Registry } from 'prom-client';

/**
 * What became of relayed packets: `delivered` to a session here,
 * `forwarded` to another replica, `no_session` (nobody holds the
 * destination key in the sender's organization), `dropped` (a bound was
 * reached: a session's or a link's unsent bytes, lookups waiting, a link
 * that failed or can't be opened).
 */
export type RelayResult = 'delivered' | 'forwarded' | 'no_session' | 'dropped';
const RESULTS: readonly RelayResult[] = ['delivered', 'forwarded', 'no_session', 'dropped'];

interface Increment {
  inc(value?: number): void;
}

/** The relay's metrics (docs/protocol.md "Relays"). Packets are records, not messages. */
export class RelayMetrics {
  readonly sessions: Gauge;
  readonly links: Gauge;
  /** Messages whose framing was wrong, dropped whole (their records can't be told apart). */
  readonly malformed: Counter;
  // Children bound once: a label lookup per packet would cost a string key and a map read each.
  readonly #packets: Record<RelayResult, Increment>;
  readonly #bytes: Record<RelayResult, Increment>;

  constructor(registry: Registry) {
    const registers = [registry];
    this.sessions = new Gauge({ name: 'fleetplane_relay_sessions', help: 'Relay sessions of devices open on this replica.', registers });
    this.links = new Gauge({ name: 'fleetplane_relay_links', help: 'Open links to other replicas carrying relayed packets.', registers });
    const packets = new Counter({
      name: 'fleetplane_relay_packets_total',
      help: 'Relayed WireGuard packets by result (delivered here, forwarded to another replica, no_session, dropped at a bound).',
      labelNames: ['result'] as const,
      registers,
    });
    const bytes = new Counter({
      name: 'fleetplane_relay_bytes_total',
      help: 'Bytes of relayed WireGuard packets (without the relay framing) by result.',
      labelNames: ['result'] as const,
      registers,
    });
    this.malformed = new Counter({
      name: 'fleetplane_relay_malformed_total',
      help: 'Relay messages dropped because their framing was wrong (from devices, or from other replicas).',
      registers,
    });
    const byResult = (c: Counter<'result'>): Record<RelayResult, Increment> => {
      // Every result is shown from the start, at 0: a rate over a series that appears later misses its first packets.
      for (const result of RESULTS) c.inc({ result }, 0);
      return Object.fromEntries(RESULTS.map((r) => [r, c.labels(r)])) as Record<RelayResult, Increment>;
    };
    this.#packets = byResult(packets);
    this.#bytes = byResult(bytes);
  }

  count(result: RelayResult, packets: number, bytes: number): void {
    this.#packets[result].inc(packets);
    this.#bytes[result].inc(bytes);
  }
}
