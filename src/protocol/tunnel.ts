import type { DeviceStatusInput } from './schemas/device.js';

/**
 * Agent tunnel frames (docs/protocol.md "Agent tunnel and requests to agents").
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

/**
 * Which answers an agent wants to a status frame: `always` (the default when
 * `ack` is absent), a `status_ack` whether it was recorded or not; `errors`,
 * a `status_ack` only when it was not (the status is the ACK, as an xDS
 * DiscoveryRequest is: nobody acknowledges an ACK that went well).
 */
export const STATUS_ACK_MODES = { always: 'always', errors: 'errors' } as const;
export type StatusAckMode = (typeof STATUS_ACK_MODES)[keyof typeof STATUS_ACK_MODES];

/**
 * Agent → server: the device's status (the ACK of what it applied, or a
 * NACK with `apply_error`), over the tunnel it already holds instead of a
 * `PUT .../status` request. `seq` is the agent's own counter (a positive
 * integer, increasing per tunnel); `status` has the fields and limits of the
 * `PUT` body. The server answers with a `status_ack` of the same `seq` once
 * the batch holding the status has committed, or, when `ack` is `errors`,
 * only if it could not record it.
 */
export interface TunnelStatusFrame {
  type: 'status';
  seq: number;
  status: DeviceStatusInput;
  ack?: StatusAckMode;
}

/**
 * Server → agent: the status frame `seq` was recorded (committed), or not,
 * with `error` (`validation_failed`, `not_found` when the device is gone,
 * `unavailable`). Only the latest status of a device is kept: a status
 * superseded by a newer frame before its batch committed is acknowledged
 * with the newer one's outcome.
 */
export interface TunnelStatusAck {
  type: 'status_ack';
  seq: number;
  error?: { code: string; message: string };
}

export type TunnelFrame = TunnelRequest | TunnelResponse | TunnelControl | TunnelStatusFrame | TunnelStatusAck;

/** `type` of the tunnel's non-request frames. */
export const TUNNEL_FRAME_TYPES = { ping: 'ping', pong: 'pong', status: 'status', statusAck: 'status_ack' } as const;

/** Methods every agent serves. Modules may register more. */
export const AGENT_METHODS = { ping: 'ping', status: 'status', forceSync: 'force-sync' } as const;

/** Methods a read-role token may call. */
export const READ_ONLY_AGENT_METHODS: readonly string[] = [AGENT_METHODS.ping, AGENT_METHODS.status];

export const TUNNEL_PING_INTERVAL_MS = 20_000;
export const RPC_WAIT_DEFAULT_S = 20;
export const RPC_WAIT_MAX_S = 120;
/** The longest `deadline_ms` an agent accepts: the longest delay a timer holds (about 24.8 days). */
export const MAX_AGENT_DEADLINE_MS = 2_147_483_647;

/** Audience of the JWTs replicas present to each other's private listener. */
export const PRIVATE_JWT_AUDIENCE = 'fleetplane-private';
export const PRIVATE_JWT_MAX_LIFETIME_S = 30;

/**
 * Milliseconds an agent has to answer a request once it is delivered (the
 * `deadline_ms` of the request frame: relative to its receipt, so the clocks
 * of server and agent needn't agree). `?wait=` bounds only the wait for the
 * device to connect; the answer has this long on top.
 */
export const RPC_ANSWER_TIMEOUT_MS = 30_000;

/** Agent method names: lower case, digits, `.`, `_`, `-`; at most 64 characters. */
export const AGENT_METHOD_PATTERN = '^[a-z0-9][a-z0-9._-]{0,63}$';

/** Codes of error frames agents send (`{"id", "error": {"code", "message"}}`); modules may add their own. */
export const AGENT_ERROR_CODES = {
  /** No handler is registered for the method. */
  notFound: 'not_found',
  /** The handler did not finish before `deadline_ms`. */
  deadlineExceeded: 'deadline_exceeded',
  /** The agent runs as many requests as it allows at once. */
  tooManyRequests: 'too_many_requests',
  /** The handler failed without a code of its own. */
  internal: 'internal',
  /** The agent is stopping; the handler was cancelled. */
  unavailable: 'unavailable',
} as const;

/** WebSocket close codes of the tunnel (4000-4999 are for applications). */
export const TUNNEL_CLOSE_CODES = {
  /**
   * The agent closes a tunnel it no longer needs (maximum connection age,
   * shutdown) once every request it started there has been answered. Any
   * request still unanswered at this close was never started, so the server
   * may deliver it again through another tunnel.
   */
  drained: 4000,
  /** The server closes a device's oldest tunnel when it opens more than the server keeps. */
  tooManyTunnels: 4001,
  /** Either side closes a tunnel whose peer stopped answering pings. */
  pingTimeout: 4002,
  /**
   * The server closes a tunnel whose device token was revoked (deleting the
   * device revokes it too) or expired; reconnecting with that token fails with 401.
   */
  revoked: 4003,
} as const;

/**
 * Claims of the private JWT beside `aud`, `iat`, `exp` and `iss` (the
 * forwarding replica's id): `sub` is the device id; these bind the token to
 * one method and carry the answer deadline (ms, relative).
 */
export const PRIVATE_JWT_CLAIMS = { method: 'method', deadlineMs: 'deadline_ms' } as const;
