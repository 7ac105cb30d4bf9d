import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { registerOpenFdsGauge } from './open-fds.js';
import type { BusStats } from './bus/index.js';
import { registerBusMetrics } from './bus-metrics.js';

/**
 * The server's Prometheus metrics, on a registry of its own so several
 * servers can live in one process (tests).
 */
export class Metrics {
  readonly registry = new Registry();

  readonly httpRequests = new Counter({
    name: 'fleetplane_http_requests_total',
    help: 'HTTP requests by method, route and status.',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [this.registry],
  });
  readonly httpDuration = new Histogram({
    name: 'fleetplane_http_request_duration_seconds',
    help: 'HTTP request latency by route (until the response, or the stream, ends).',
    labelNames: ['method', 'route'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [this.registry],
  });
  readonly http2Sessions = new Gauge({
    name: 'fleetplane_http2_sessions',
    help: 'Open HTTP/2 connections on the public listener (with TLS): each carries every request and stream of one browser.',
    registers: [this.registry],
  });
  readonly dbQueries = new Counter({
    name: 'fleetplane_db_queries_total',
    help: 'Database queries by statement kind and outcome.',
    labelNames: ['statement', 'ok'] as const,
    registers: [this.registry],
  });
  readonly dbDuration = new Histogram({
    name: 'fleetplane_db_query_duration_seconds',
    help: 'Database query latency.',
    labelNames: ['statement'] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1],
    registers: [this.registry],
  });
  readonly compactedTombstones = new Counter({
    name: 'fleetplane_compacted_tombstones_total',
    help: 'Tombstones removed by compaction.',
    registers: [this.registry],
  });
  readonly auditDeniedDropped = new Counter({
    name: 'fleetplane_audit_denied_dropped_total',
    help: 'Refused write attempts of a resolved credential not recorded in the audit log, by the limit that dropped them (source, organization or global).',
    labelNames: ['limit'] as const,
    registers: [this.registry],
  });
  readonly httpRefusals = new Counter({
    name: 'fleetplane_http_refusals_total',
    help: 'Write requests refused with 401 or 403, by reason: no_credential and bad_credential (never in the audit log), not_allowed (audited within its limits).',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });
  readonly auditPruned = new Counter({
    name: 'fleetplane_audit_pruned_total',
    help: 'Audit entries deleted by retention.',
    registers: [this.registry],
  });
  readonly up = new Gauge({ name: 'fleetplane_up', help: '1 while the server runs.', registers: [this.registry], aggregator: 'min' });

  /**
   * `processMetrics`: also the process's CPU, memory, file descriptors and
   * Node.js runtime, under the names every Prometheus client library uses
   * (`process_cpu_seconds_total`, `process_resident_memory_bytes`,
   * `nodejs_heap_size_used_bytes`, ...), so standard dashboards find them.
   */
  constructor(opts: { processMetrics?: boolean } = {}) {
    if (opts.processMetrics) {
      collectDefaultMetrics({ register: this.registry });
      for (const m of this.registry.getMetricsAsArray()) {
        // `nodejs_active_*` list every handle, request or resource at each scrape, and a fleet's
        // server holds two sockets per agent: at 10,000 agents a scrape spent about 20 ms of CPU and
        // left 20,000-element arrays per process for the GC (`process_open_fds` counts them).
        // A gauge named `_total` breaks the naming conventions, which reserve it for counters.
        const perHandle = m.name.startsWith('nodejs_active_');
        if (perHandle || (String(m.type) !== 'counter' && m.name.endsWith('_total'))) this.registry.removeSingleMetric(m.name);
      }
      // The library's own lists /proc/self/fd at each scrape: a string per socket.
      this.registry.removeSingleMetric('process_open_fds');
      registerOpenFdsGauge(this.registry);
    }
    this.up.set(1);
  }

  /** Exposes a reliable bus driver's counters, read at scrape time (bus-metrics.ts). */
  observeBus(stats: Readonly<BusStats>): void {
    registerBusMetrics(this.registry, stats);
  }

  /** Total queries so far (for tests and benchmarks that count, not time). */
  async queryCount(): Promise<number> {
    const m = await this.dbQueries.get();
    return m.values.reduce((sum, v) => sum + v.value, 0);
  }
}
