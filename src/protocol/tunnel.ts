/**
 * Agent tunnel frames (PROTOCOL.md "Agent tunnel and requests to agents").
 * JSON text messages over a WebSocket opened with the device token.
 */
export interface TunnelRequest {
  id: string;
  method: string;
  params: Record<string, unknown>;
  deadline_ms: number;
}

export type TunnelResponse =
  | { id: string; result: unknown }
  | { id: string; error: { code: string; message: string } };

export type TunnelControl = { type: 'ping' } | { type: 'pong' };

export type TunnelFrame = TunnelRequest | TunnelResponse | TunnelControl;

/** Methods every agent serves. Modules may register more. */
export const AGENT_METHODS = { ping: 'ping', status: 'status', forceSync: 'force-sync' } as const;

/** Methods a read-role token may call. */
export const READ_ONLY_AGENT_METHODS: readonly string[] = [AGENT_METHODS.ping, AGENT_METHODS.status];

export const TUNNEL_PING_INTERVAL_MS = 20_000;
export const RPC_WAIT_DEFAULT_S = 20;
export const RPC_WAIT_MAX_S = 120;

/** Audience of the JWTs replicas present to each other's private listener. */
export const PRIVATE_JWT_AUDIENCE = 'fleetplane-private';
export const PRIVATE_JWT_MAX_LIFETIME_S = 30;
