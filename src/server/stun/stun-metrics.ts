import { Counter, type Registry } from 'prom-client';
import type { StunOutcome } from './answer.js';

/** Which of the two ports a datagram arrived on. */
export type StunPortRole = 'primary' | 'alternate';

/** What became of a datagram: the answer's outcome, or `dropped` when the send queue was full. */
export type StunResult = StunOutcome | 'dropped';

/** The STUN responder's Prometheus metrics, on the server's registry. */
export class StunMetrics {
  readonly requests: Counter<'port' | 'result'>;

  constructor(registry: Registry) {
    this.requests = new Counter({
      name: 'fleetplane_stun_requests_total',
      help: 'Datagrams received by the STUN responder, by port (primary, alternate) and result: answered, refused (error response), ignored (not a Binding request), dropped (send queue full).',
      labelNames: ['port', 'result'] as const,
      registers: [registry],
    });
  }
}
