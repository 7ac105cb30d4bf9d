import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { FanOutTimes } from './fan-out-times.js';
import type { CachedEvent } from './event-ring.js';
import { scrapedGauge } from '../scraped-gauge.js';

/** Metrics of the watch engine (registered on the server's registry). */
export class WatchMetrics {
  readonly watchers: Gauge;
  readonly feeds: Gauge;
  readonly eventsWritten: Counter;
  readonly patchesWritten: Counter;
  readonly gzipWritten: Counter;
  readonly bytesWritten: Counter;
  readonly fillQueries: Counter;
  readonly catchUpQueries: Counter;
  readonly snapshotQueries: Counter;
  readonly snapshotBytes: Gauge;
  readonly queuedBytes: Gauge;
  readonly listsFromSnapshot: Counter;
  readonly listWaits: Counter<'outcome'>;
  readonly changes: Counter;
  readonly slowConsumerCloses: Counter;
  readonly fanoutSeconds: Histogram;
  readonly streamsEnded: Counter<'reason'>;
  /**
   * Totals the fan-out path adds to with plain arithmetic: a counter
   * increment per socket write would cost more than the write's bookkeeping
   * at 10,000 watchers. Reported by the counters above at scrape time.
   */
  readonly written = { events: 0, bytes: 0, patches: 0, gzip: 0 };
  /** Reports the snapshot budget's use at scrape time. */
  readonly observeSnapshot: (used: () => number) => void;
  /** When recent heads reached the tail caches: the start of the ACK latency (fleet metrics). */
  readonly fanOutTimes = new FanOutTimes();

  constructor(registry: Registry) {
    const registers = [registry];
    this.watchers = new Gauge({ name: 'fleetplane_watchers', help: 'Open watch streams.', registers });
    this.feeds = new Gauge({ name: 'fleetplane_watch_feeds', help: 'Organizations with a tail cache on this replica.', registers });
    const written = this.written;
    this.eventsWritten = new Counter({
      name: 'fleetplane_watch_events_written_total',
      help: 'Events written to watch streams.',
      registers,
      collect() {
        this.reset();
        this.inc(written.events);
      },
    });
    this.patchesWritten = new Counter({
      name: 'fleetplane_watch_patches_written_total',
      help: 'Of the events written to watch streams, those sent as patch events (to watches that asked for patches).',
      registers,
      collect() {
        this.reset();
        this.inc(written.patches);
      },
    });
    this.gzipWritten = new Counter({
      name: 'fleetplane_watch_gzip_written_total',
      help: 'Of the events written to watch streams, those sent packed as gzip events (to watches that asked for gzip).',
      registers,
      collect() {
        this.reset();
        this.inc(written.gzip);
      },
    });
    this.bytesWritten = new Counter({
      name: 'fleetplane_watch_bytes_written_total',
      help: 'Bytes written to watch streams.',
      registers,
      collect() {
        this.reset();
        this.inc(written.bytes);
      },
    });
    this.fillQueries = new Counter({
      name: 'fleetplane_watch_fill_queries_total',
      help: 'Tail cache fill queries (one per signal per organization, whatever the number of watchers).',
      registers,
    });
    this.catchUpQueries = new Counter({
      name: 'fleetplane_watch_catchup_queries_total',
      help: 'Queries by watchers behind the tail cache (initial lists, resumes, slow watchers).',
      registers,
    });
    this.snapshotQueries = new Counter({
      name: 'fleetplane_watch_snapshot_queries_total',
      help: "Reads of a whole organization to build its snapshot (one per organization when its first watcher arrives).",
      registers,
    });
    const snapshot = scrapedGauge({
      name: 'fleetplane_watch_snapshot_bytes',
      help: 'Bytes charged to the snapshot budget by the organizations in memory.',
      registers,
    });
    this.snapshotBytes = snapshot.gauge;
    this.observeSnapshot = snapshot.readFrom;
    this.queuedBytes = new Gauge({
      name: 'fleetplane_watch_queued_bytes',
      help: 'Bytes queued to all watchers together at the last check (bounded by --watch-queue-limit).',
      registers,
    });
    this.listsFromSnapshot = new Counter({
      name: 'fleetplane_watch_lists_from_snapshot_total',
      help: 'Initial lists written from the in-memory snapshot (no database read).',
      registers,
    });
    this.listWaits = new Counter({
      name: 'fleetplane_watch_list_admissions_total',
      help: 'Watch requests with an initial list, by admission outcome (memory: from the snapshot, no turn needed; immediate, waited, refused).',
      labelNames: ['outcome'] as const,
      registers,
    });
    this.changes = new Counter({ name: 'fleetplane_watch_changes_total', help: 'Changes appended to tail caches.', registers });
    this.slowConsumerCloses = new Counter({
      name: 'fleetplane_watch_slow_consumer_closes_total',
      help: 'Watchers closed with slow_consumer.',
      registers,
    });
    this.fanoutSeconds = new Histogram({
      name: 'fleetplane_watch_fanout_seconds',
      help: 'From the change signal (sent at commit) to the last socket write of its fan-out.',
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers,
    });
    this.streamsEnded = new Counter({
      name: 'fleetplane_watch_streams_ended_total',
      help: 'Watch streams ended, by reason.',
      labelNames: ['reason'] as const,
      registers,
    });
  }

  /** Counts a write of one of `e`'s other forms than its whole line (a patch, a gzip event, or both). */
  countVariant(e: CachedEvent, bytes: Buffer): void {
    if (bytes === e.patch || bytes === e.gzipPatch) this.written.patches++;
    if (bytes === e.gzip || bytes === e.gzipPatch) this.written.gzip++;
  }
}
