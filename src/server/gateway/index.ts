/** The agent gateway: tunnels, agent registry, request routing, private replica listener. */
export { AgentGateway, type AgentGatewayOptions, type GatewayStats, type GatewayTuning } from './agent-gateway.js';
export { serveClusterAgentRegistry, ClusterRegistryError, ClusterAgentRegistry, CLUSTER_REGISTRIES, type ClusterRegistryType } from './cluster-agent-registry.js';
// What the relay (src/server/relay/) reuses: the registries keyed by any id, the announcer, the device upgrade endpoint.
export { MemoryAgentRegistry, type AgentRegistry } from './agent-registry.js';
export { RedisAgentRegistry } from './redis-agent-registry.js';
export { AgentAnnouncer } from './agent-announcer.js';
export { attachTunnelEndpoint, type TunnelEndpointOptions } from './tunnel-endpoint.js';
