import type { Logger } from 'pino';
import { ApiError } from '../errors.js';
import type { AgentWaiters } from './agent-waiters.js';
import type { Delivery } from './delivery.js';
import type { Forwarder } from './forwarder.js';
import type { GatewayMetrics } from './gateway-metrics.js';
import type { ServerTunnel } from './server-tunnel.js';
import type { TunnelTable } from './tunnel-table.js';

/** One request to an agent. */
export interface AgentCall {
  deviceId: string;
  method: string;
  params: Record<string, unknown>;
  /** How long the agent has to answer once the request reaches it (ms). */
  answerMs: number;
  /** Until when (ms since the epoch) to wait for the device to connect. */
  connectDeadline: number;
  /** The caller went away: stop waiting, drop the answer. */
  signal: AbortSignal;
}

function shuffled<T>(items: readonly T[]): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [out[i], out[j]] = [out[j] as T, out[i] as T];
  }
  return out;
}

/**
 * Routes a request to exactly one of the device's tunnels: a local one if
 * this replica has one, else through another replica that has (a random one
 * of those the registry names with a live lease; the next on a failure that
 * certainly didn't reach the agent), else waits for the device to connect
 * anywhere. A request that may have reached the agent is never sent again.
 */
export class RpcRouter {
  constructor(
    private readonly tunnels: TunnelTable,
    private readonly waiters: AgentWaiters,
    private readonly forwarder: Forwarder,
    private readonly metrics: GatewayMetrics,
    private readonly logger: Logger,
  ) {}

  /** Resolves with the final delivery; rejects with an ApiError (504, 429, 503) or the signal's reason. */
  async call(c: AgentCall): Promise<Delivery> {
    const handle = this.waiters.open(c.deviceId);
    try {
      for (;;) {
        const reachable = await handle.next(c.connectDeadline, c.signal);
        if (reachable.local) {
          const d = await this.deliverLocal(c);
          if (d.kind !== 'not_delivered') {
            this.metrics.requests.inc({ route: d.kind === 'lost' ? 'failed' : 'local' });
            return d;
          }
          continue;
        }
        let busy: Delivery | undefined;
        for (const target of shuffled(reachable.remote)) {
          handle.markTried(target.id);
          const d = await this.forwarder.forward(target, c.deviceId, c.method, c.params, c.answerMs, c.signal);
          this.metrics.forwardAttempts.inc({ result: d.kind === 'not_delivered' ? 'not_delivered' : d.kind === 'lost' ? 'lost' : 'delivered' });
          if (d.kind === 'not_delivered') {
            this.logger.debug({ device: c.deviceId, replica: target.id, reason: d.reason }, 'forward not delivered; trying elsewhere');
            if (d.busy) busy = d;
            continue;
          }
          this.metrics.requests.inc({ route: d.kind === 'lost' ? 'failed' : 'forwarded' });
          return d;
        }
        // Connected but saturated everywhere: waiting for a connect wouldn't help.
        if (busy) throw new ApiError('too_many_requests', 'every tunnel to this agent has as many pending requests as allowed');
      }
    } catch (err) {
      this.metrics.requests.inc({ route: 'failed' });
      throw err;
    } finally {
      handle.close();
      if (handle.waitedMs !== undefined) this.metrics.waitSeconds.observe({ outcome: handle.outcome }, handle.waitedMs / 1000);
    }
  }

  /**
   * Delivers through this replica's own tunnels only (also what the private
   * listener does): `not_delivered` when there is none; 429 when every one
   * is full; another tunnel when one drains under the request.
   */
  async deliverLocal(c: Omit<AgentCall, 'connectDeadline'>): Promise<Delivery> {
    const tried = new Set<ServerTunnel>();
    for (;;) {
      const tunnel = this.tunnels.pick(c.deviceId, tried);
      if (tunnel === undefined) return { kind: 'not_delivered', reason: 'no tunnel to the device on this replica' };
      if (tunnel === 'busy') throw new ApiError('too_many_requests', 'every tunnel to this agent has as many pending requests as allowed');
      tried.add(tunnel);
      const d = await tunnel.call(c.method, c.params, c.answerMs, c.signal);
      if (d.kind !== 'not_delivered') return d;
    }
  }
}
