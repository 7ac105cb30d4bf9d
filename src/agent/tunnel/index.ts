/**
 * The agent's tunnel to the server: a WebSocket client that serves agent
 * methods (PROTOCOL.md "Agent tunnel and requests to agents").
 */
export { TunnelClient, tunnelUrl, type TunnelClientOptions, type TunnelState } from './tunnel-client.js';
export { AgentMethodRegistry, AgentMethodError, type AgentMethodHandler, type AgentCallContext } from './method-registry.js';
export { TunnelHandshakeError, type CloseInfo } from './agent-connection.js';
