import type { ErrorCode } from '../protocol/wire.js';

/**
 * Codes the SDK raises itself, for failures that never reached (or never came
 * back from) the server in the protocol's error form.
 * - `network_error`: fetch failed or the connection broke mid-body.
 * - `stream_idle`: a watch stream sent nothing (not even a bookmark) for too long.
 * - `invalid_response`: a body or a watch line that isn't what docs/protocol.md says.
 * - `line_too_long`: a watch line exceeded the reader's buffer limit.
 */
export type ClientErrorCode = 'network_error' | 'stream_idle' | 'invalid_response' | 'line_too_long';

export type FleetplaneErrorCode = ErrorCode | ClientErrorCode;

export interface FleetplaneErrorInit {
  code: FleetplaneErrorCode;
  message: string;
  /** HTTP status; 0 when no response was received. */
  status?: number;
  details?: Record<string, unknown>;
  cause?: unknown;
  /** See FleetplaneError.retryAfterMs. */
  retryAfterMs?: number | undefined;
}

/**
 * Base of every error the SDK throws (aborts excepted: those rethrow the
 * signal's reason). `code` is the wire error code (or a ClientErrorCode),
 * `status` the HTTP status (0 without a response), `details` the server's
 * `error.details`, `cause` the underlying error when there is one,
 * `retryAfterMs` how long the server asked the client to stay away.
 */
export class FleetplaneError extends Error {
  override name = 'FleetplaneError';
  readonly code: FleetplaneErrorCode;
  readonly status: number;
  readonly details: Record<string, unknown> | undefined;
  /**
   * Milliseconds the server asked to wait before retrying: its `Retry-After`
   * header on a 429 or 503 answer (an HTTP-date is counted from the local
   * clock when the answer arrived). Undefined when it didn't say. Retry
   * loops of the SDK wait at least this long, plus jitter.
   */
  readonly retryAfterMs: number | undefined;

  constructor(init: FleetplaneErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.code = init.code;
    this.status = init.status ?? 0;
    this.details = init.details;
    this.retryAfterMs = init.retryAfterMs;
  }
}

/** `unauthorized` (401) and `forbidden` (403, also a watch stream's revoked token). */
export class AuthError extends FleetplaneError {
  override name = 'AuthError';
}

/** `not_found` (404): also what a token gets for things it may not see. */
export class NotFoundError extends FleetplaneError {
  override name = 'NotFoundError';
}

/** `conflict`, `already_exists`, `field_owned_elsewhere` (409) and `precondition_failed` (412, If-Match). */
export class ConflictError extends FleetplaneError {
  override name = 'ConflictError';
}

/**
 * `bad_request`, `validation_failed`, `policy_invalid` (400; `details` {path, line, column}),
 * `policy_test_failed` (422; `details.failures`), `payload_too_large` (413),
 * `unsupported_media_type` (415) and `headers_too_large` (431).
 */
export class ValidationError extends FleetplaneError {
  override name = 'ValidationError';
}

/** `revision_compacted` (410 or a watch `error` event): list again from revision 0. */
export class CompactedError extends FleetplaneError {
  override name = 'CompactedError';
}

/** `unavailable`, `too_many_requests`, `too_many_connections`, `slow_consumer`, `request_timeout`: retry later (or elsewhere). */
export class UnavailableError extends FleetplaneError {
  override name = 'UnavailableError';
}

/** `agent_error` (502: the agent answered with an error) and `agent_not_connected` (504). */
export class AgentError extends FleetplaneError {
  override name = 'AgentError';
}

/** `internal` (500), and any other server failure without a known code. */
export class ServerError extends FleetplaneError {
  override name = 'ServerError';
}

/** `network_error` and `stream_idle`: the request or the stream didn't get through. */
export class TransportError extends FleetplaneError {
  override name = 'TransportError';
}

/**
 * A login's answers (docs/protocol.md "Users and login"): `login_failed`,
 * `sign_in_refused`, `access_denied`, `expired_token`, and the device login's
 * `authorization_pending` and `slow_down` (which the SDK's device login
 * handles itself).
 */
export class LoginError extends FleetplaneError {
  override name = 'LoginError';
}

/** `invalid_response` and `line_too_long`: the server said something the protocol doesn't allow. */
export class ProtocolError extends FleetplaneError {
  override name = 'ProtocolError';
}

/**
 * A `patch` event for an object this client doesn't hold at the patch's
 * `from_revision`: its cache no longer follows the stream. Informers list
 * again from 0 (as after `revision_compacted`); a correct server never
 * causes it.
 */
export class PatchBaseError extends ProtocolError {
  override name = 'PatchBaseError';
}
