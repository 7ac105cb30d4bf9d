import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

/** How a request to an agent ended, for `fleetplane_agent_rpc_requests_total`. */
export type RpcRoute = 'local' | 'forwarded' | 'failed';

/** Outcome of one attempt to hand a request to another replica. */
export type ForwardResult = 'delivered' | 'not_delivered' | 'lost';

/** How a parked request stopped waiting. */
export type WaitOutcome = 'connected' | 'timeout' | 'aborted' | 'failed';

/** The agent gateway's Prometheus metrics, on the server's registry. */
export class GatewayMetrics {
  readonly tunnelsOpen: Gauge;
  readonly requests: Counter<'route'>;
  readonly forwardAttempts: Counter<'result'>;
  readonly privateRequests: Counter<'status'>;
  readonly waitSeconds: Histogram<'outcome'>;
  readonly waiters: Gauge;
  readonly registryReads: Counter;

  constructor(registry: Registry) {
    const registers = [registry];
    this.tunnelsOpen = new Gauge({ name: 'fleetplane_agent_tunnels_open', help: 'Agent tunnels open on this replica.', registers });
    this.requests = new Counter({
      name: 'fleetplane_agent_rpc_requests_total',
      help: 'Requests to agents by how they ended: delivered through a local tunnel, forwarded to another replica, or failed (not delivered).',
      labelNames: ['route'] as const,
      registers,
    });
    this.forwardAttempts = new Counter({
      name: 'fleetplane_agent_rpc_forward_attempts_total',
      help: 'Attempts to hand a request to another replica: delivered, not delivered (retried elsewhere), lost (outcome unknown).',
      labelNames: ['result'] as const,
      registers,
    });
    this.privateRequests = new Counter({
      name: 'fleetplane_private_rpc_requests_total',
      help: 'Requests received on the private listener, by HTTP status.',
      labelNames: ['status'] as const,
      registers,
    });
    this.waitSeconds = new Histogram({
      name: 'fleetplane_agent_rpc_wait_seconds',
      help: 'Time requests spent waiting for their agent to connect, by how the wait ended.',
      labelNames: ['outcome'] as const,
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120],
      registers,
    });
    this.waiters = new Gauge({ name: 'fleetplane_agent_rpc_waiters', help: 'Requests waiting for their agent to connect.', registers });
    this.registryReads = new Counter({
      name: 'fleetplane_agent_registry_reads_total',
      help: 'Reads of the agent registry (which replicas hold a device).',
      registers,
    });
  }
}
