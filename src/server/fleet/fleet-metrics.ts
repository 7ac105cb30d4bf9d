import { Counter, Gauge, type Registry } from 'prom-client';

/** Metrics of device statuses, presence and convergence streams. */
export class FleetMetrics {
  readonly statusBatches: Counter;
  readonly statusBatchFailures: Counter;
  readonly statusesWritten: Counter;
  readonly statusUnchanged: Counter;
  readonly statusRefused: Counter;
  readonly statusPending: Gauge;
  readonly connectedDevices: Gauge;
  readonly convergenceStreams: Gauge;
  readonly convergenceQueries: Counter;

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
    this.statusPending = new Gauge({ name: 'fleetplane_statuses_pending', help: 'Device statuses waiting for a batch.', registers });
    this.connectedDevices = new Gauge({
      name: 'fleetplane_connected_devices',
      help: 'Devices holding a tunnel or a watch stream on this replica.',
      registers,
    });
    this.convergenceStreams = new Gauge({ name: 'fleetplane_convergence_streams', help: 'Open convergence streams.', registers });
    this.convergenceQueries = new Counter({
      name: 'fleetplane_convergence_stream_queries_total',
      help: 'Convergence queries made for streams (at most one per organization per interval, whatever the number of streams).',
      registers,
    });
  }
}
