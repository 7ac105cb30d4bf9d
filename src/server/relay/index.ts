/** The relay between devices (docs/protocol.md "Relays"): sessions, routing across replicas, the relay list. */
export { RelayService, type RelayServiceOptions, type RelayStats } from './relay-service.js';
export { RelayMetrics, type RelayResult } from './relay-metrics.js';
export { relayListOf } from './relay-list.js';
