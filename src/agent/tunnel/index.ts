/**
 * The agent's tunnel to the server: a WebSocket client that serves agent
 * methods (docs/protocol.md "Agent tunnel and requests to agents").
 */
export {
  TunnelClient,
  tunnelUrl,
  DEFAULT_STATUS_ACK_TIMEOUT_MS,
  type TunnelClientOptions,
  type TunnelState,
  type TunnelOpenListener,
  type StatusRejectedListener,
  type SendStatusOptions,
} from './tunnel-client.js';
export { MAX_PENDING_STATUS_ACKS, type StatusSendOutcome } from './status-acks.js';
export { AgentMethodRegistry, AgentMethodError, type AgentMethod, type AgentMethodHandler, type AgentCallContext } from './method-registry.js';
export { TunnelHandshakeError, type CloseInfo, type StatusRejection } from './agent-connection.js';
