import { Counter, Gauge, type Registry } from 'prom-client';
import { RESYNC_REASONS, type BusStats, type ResyncReason } from './bus/index.js';

/** A reliable bus's counter, as BusStats names it (`resyncs_<reason>` for each resync reason). */
export type BusCounterKey = Exclude<keyof BusStats, 'resyncs' | 'publishers'> | `resyncs_${ResyncReason}`;

/** One Prometheus series: the metric's name and the labels that select it. */
export interface BusSeries {
  readonly metric: string;
  readonly labels: Readonly<Record<string, string>>;
}

interface CounterSpec {
  readonly help: string;
  /** Label values (or none) → the BusStats counter they expose. */
  readonly series: readonly { readonly labels: Readonly<Record<string, string>>; readonly key: BusCounterKey }[];
}

/**
 * The bus's counters as Prometheus counters: one metric per quantity, labels
 * only where summing over them means something (messages of every type,
 * resyncs for every reason).
 */
const COUNTERS: Readonly<Record<string, CounterSpec>> = {
  fleetplane_bus_messages_sent_total: {
    help: 'Bus messages handed to the transport, by type (signal includes the `all` a full queue becomes; in a transaction: issued, maybe rolled back).',
    series: [
      { labels: { type: 'signal' }, key: 'signalsSent' },
      { labels: { type: 'hello' }, key: 'hellosSent' },
    ],
  },
  fleetplane_bus_send_failures_total: { help: 'Bus messages the transport failed to send.', series: [{ labels: {}, key: 'sendFailures' }] },
  fleetplane_bus_messages_received_total: {
    help: 'Bus messages received, by type.',
    series: [
      { labels: { type: 'signal' }, key: 'signalsReceived' },
      { labels: { type: 'hello' }, key: 'hellosReceived' },
      { labels: { type: 'all' }, key: 'allsReceived' },
    ],
  },
  fleetplane_bus_malformed_messages_total: { help: 'Bus payloads that were not bus messages (ignored).', series: [{ labels: {}, key: 'malformed' }] },
  fleetplane_bus_dropped_messages_total: {
    help: 'Bus messages discarded on purpose by a test’s fault hook (never in production), by direction.',
    series: [
      { labels: { direction: 'outgoing' }, key: 'droppedOutgoing' },
      { labels: { direction: 'incoming' }, key: 'droppedIncoming' },
    ],
  },
  fleetplane_bus_gaps_total: { help: 'Bus sequence numbers found missing.', series: [{ labels: {}, key: 'gaps' }] },
  fleetplane_bus_gaps_filled_total: { help: 'Missing bus sequence numbers that arrived later after all.', series: [{ labels: {}, key: 'gapsFilled' }] },
  fleetplane_bus_resyncs_total: {
    help: 'Wake-ups of every local subscription because bus messages may have been lost, by reason.',
    series: RESYNC_REASONS.map((reason) => ({ labels: { reason }, key: `resyncs_${reason}` as const })),
  },
  fleetplane_bus_reconnects_total: { help: 'Reconnections of the bus listening connection.', series: [{ labels: {}, key: 'reconnects' }] },
  fleetplane_bus_deaf_restarts_total: {
    help: 'Bus listener restarts because the bus stopped hearing its own messages.',
    series: [{ labels: {}, key: 'deafRestarts' }],
  },
  fleetplane_bus_overflows_total: {
    help: "Times a bus publisher's pending names hit their limit and became one `all` message.",
    series: [{ labels: {}, key: 'overflows' }],
  },
};

/** Publishers the bus tracks (a gauge). */
export const BUS_PUBLISHERS_METRIC = 'fleetplane_bus_publishers';

/** Where each BusStats counter is exposed: for readers of a scrape (tests, benchmarks). */
export const BUS_SERIES: Readonly<Record<BusCounterKey, BusSeries>> = Object.fromEntries(
  Object.entries(COUNTERS).flatMap(([metric, spec]) => spec.series.map((s) => [s.key, { metric, labels: s.labels }])),
) as Record<BusCounterKey, BusSeries>;

function read(stats: Readonly<BusStats>, key: BusCounterKey): number {
  if (key.startsWith('resyncs_')) return stats.resyncs[key.slice('resyncs_'.length) as ResyncReason];
  return stats[key as Exclude<BusCounterKey, `resyncs_${ResyncReason}`>];
}

/** Registers the bus's counters and publisher gauge on `registry`, read from `stats` at scrape time. */
export function registerBusMetrics(registry: Registry, stats: Readonly<BusStats>): void {
  const registers = [registry];
  for (const [name, spec] of Object.entries(COUNTERS)) {
    const labelNames = [...new Set(spec.series.flatMap((s) => Object.keys(s.labels)))];
    new Counter({
      name,
      help: spec.help,
      labelNames,
      registers,
      collect() {
        this.reset();
        for (const s of spec.series) this.inc(s.labels, read(stats, s.key));
      },
    });
  }
  new Gauge({
    name: BUS_PUBLISHERS_METRIC,
    help: 'Bus publishers (replicas) this bus currently tracks.',
    registers,
    collect() {
      this.set(stats.publishers);
    },
  });
}
