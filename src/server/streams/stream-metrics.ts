import { Counter, Gauge, type Registry } from 'prom-client';
import { STREAM_KINDS, type EndCause, type StreamKind } from './owned-stream.js';

/** Metrics of the stream owner: open streams by kind, and the ends it gave. */
export class StreamMetrics {
  readonly #ended: Counter<'kind' | 'cause'>;
  #countOpen: (kind: StreamKind) => number = () => 0;

  constructor(registry: Registry) {
    const registers = [registry];
    const count = (kind: StreamKind): number => this.#countOpen(kind);
    new Gauge({
      name: 'fleetplane_streams_open',
      help: 'Long-lived streams open on this replica, by kind (watch, convergence, tunnel, relay, relay_link, relay_list).',
      labelNames: ['kind'] as const,
      registers,
      collect() {
        for (const kind of STREAM_KINDS) this.set({ kind }, count(kind));
      },
    });
    this.#ended = new Counter({
      name: 'fleetplane_streams_ended_total',
      help: 'Streams the server ended, by kind and cause (revoked: the credential was revoked or expired; shutdown; slow: over a byte bound).',
      labelNames: ['kind', 'cause'] as const,
      registers,
    });
  }

  /** Where the open-stream gauge reads its figures at scrape time. */
  observeOpen(count: (kind: StreamKind) => number): void {
    this.#countOpen = count;
  }

  ended(kind: StreamKind, cause: EndCause): void {
    this.#ended.inc({ kind, cause });
  }
}
