/** The agent gateway: tunnels, agent registry, request routing, private replica listener. */
export { AgentGateway, type AgentGatewayOptions, type GatewayStats, type GatewayTuning } from './agent-gateway.js';
export { serveClusterAgentRegistry, ClusterRegistryError } from './cluster-agent-registry.js';
