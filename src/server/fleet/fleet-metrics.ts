import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { DEVICE_TOTAL_STATES, type DeviceTotals } from '../store/index.js';
import { scrapedGauge } from '../scraped-gauge.js';
import { PATH_KINDS, type PathKind } from './path-kinds.js';

/** Metrics of device statuses, presence and convergence streams. */
export class FleetMetrics {
  readonly statusBatches: Counter;
  readonly statusBatchFailures: Counter;
  readonly statusesWritten: Counter;
  readonly statusUnchanged: Counter;
  readonly statusRefused: Counter;
  /** Statuses waiting for a batch; read at scrape time from `observePending`. */
  readonly statusPending: Gauge;
  readonly connectedDevices: Gauge;
  readonly convergenceStreams: Gauge;
  /** Page streams following an organization's convergence or statuses. */
  readonly pageStreams: Gauge;
  readonly pageStreamsOpened: Counter;
  readonly convergenceQueries: Counter;
  /** Device totals by state over every organization; read at scrape time from `observeDevices`. */
  readonly devices: Gauge<'state'>;
  readonly ackLatency: Histogram;
  /** Sets where the device totals come from (undefined: the read failed; the gauge is left empty). */
  readonly observeDevices: (read: () => Promise<DeviceTotals | undefined>) => void;
  /** Sets where the number of statuses waiting for a batch comes from (the status batcher). */
  readonly observePending: (read: () => number) => void;
  /** Devices by the paths to their peers; read at scrape time from `observePaths`. */
  readonly devicesByPath: Gauge<'kind'>;
  /** Sets where the number of devices of each path kind comes from (kept per status, read per scrape). */
  readonly observePaths: (count: (kind: PathKind) => number) => void;

  constructor(registry: Registry) {
    const registers = [registry];
    this.statusBatches = new Counter({ name: 'fleetplane_status_batches_total', help: 'Status batches written (one statement each).', registers });
    this.statusBatchFailures = new Counter({ name: 'fleetplane_status_batch_failures_total', help: 'Status batches whose statement failed.', registers });
    this.statusesWritten = new Counter({ name: 'fleetplane_statuses_written_total', help: 'Device statuses recorded by status batches.', registers });
    this.statusUnchanged = new Counter({
      name: 'fleetplane_statuses_unchanged_total',
      help: 'Tunnel status reports equal to the last one written, acknowledged without a write.',
      registers,
    });
    this.statusRefused = new Counter({ name: 'fleetplane_statuses_refused_total', help: 'Statuses refused because too many were pending.', registers });
    // Read when scraped: a set per status would be a fleet's worth of calls per change.
    const pending = scrapedGauge({ name: 'fleetplane_statuses_pending', help: 'Device statuses waiting for a batch.', registers });
    this.statusPending = pending.gauge;
    this.observePending = pending.readFrom;
    this.connectedDevices = new Gauge({
      name: 'fleetplane_connected_devices',
      help: 'Devices holding a tunnel or a watch stream on this replica.',
      registers,
    });
    this.convergenceStreams = new Gauge({ name: 'fleetplane_convergence_streams', help: 'Open convergence streams.', registers });
    this.pageStreams = new Gauge({ name: 'fleetplane_page_streams', help: 'Open page streams that carry convergence or statuses.', registers });
    this.pageStreamsOpened = new Counter({ name: 'fleetplane_page_streams_opened_total', help: 'Page streams opened that carry convergence or statuses.', registers });
    this.convergenceQueries = new Counter({
      name: 'fleetplane_convergence_stream_queries_total',
      help: 'Convergence queries made for streams (at most one per organization per interval, whatever the number of streams).',
      registers,
    });
    let readDevices = async (): Promise<DeviceTotals | undefined> => undefined;
    this.devices = new Gauge({
      name: 'fleetplane_devices',
      help:
        'Devices of all organizations by convergence state (at_head, behind, error, stale add up to all devices; online is counted apart). ' +
        'Five series whatever the number of organizations; every replica reports the same totals (aggregate with max, not sum).',
      labelNames: ['state'] as const,
      registers,
      // Under --workers every worker reads the same database: one worker's answer is the server's.
      aggregator: 'first',
      async collect() {
        const totals = await readDevices();
        this.reset();
        if (totals) for (const state of DEVICE_TOTAL_STATES) this.set({ state }, totals[state]);
      },
    });
    this.observeDevices = (read) => {
      readDevices = read;
    };
    let countPaths = (_kind: PathKind): number => 0;
    this.devicesByPath = new Gauge({
      name: 'fleetplane_devices_by_path',
      help:
        'Devices connected to this replica by the paths to their peers, from their latest status recorded here: relay (a peer relayed), ' +
        'direct (none relayed, one direct), none (no peer with a handshake, or no peers). Each replica counts its own devices: aggregate with sum.',
      labelNames: ['kind'] as const,
      registers,
      collect() {
        for (const kind of PATH_KINDS) this.set({ kind }, countPaths(kind));
      },
    });
    this.observePaths = (count) => {
      countPaths = count;
    };
    this.ackLatency = new Histogram({
      name: 'fleetplane_device_ack_latency_seconds',
      help:
        "From a change's fan-out on this replica (the organization's new head reaching its tail cache) to a device's status reporting that " +
        'revision applied without error; one observation per device and revision applied, on the replica that received the status.',
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
      registers,
    });
  }
}
