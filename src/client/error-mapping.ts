import { ERRORS, HEADERS, isErrorCode, type ErrorCode } from '../protocol/wire.js';
import {
  AgentError,
  AuthError,
  CompactedError,
  ConflictError,
  FleetplaneError,
  LoginError,
  NotFoundError,
  ProtocolError,
  ServerError,
  TransportError,
  UnavailableError,
  ValidationError,
  type FleetplaneErrorCode,
  type FleetplaneErrorInit,
} from './errors.js';
import { parseRetryAfter } from './retry-after.js';

type ErrorClass = new (init: FleetplaneErrorInit) => FleetplaneError;

/** Exhaustive: a code added to the protocol catalog must be given a family here. */
const FAMILY: Record<FleetplaneErrorCode, ErrorClass> = {
  bad_request: ValidationError,
  validation_failed: ValidationError,
  policy_invalid: ValidationError,
  policy_test_failed: ValidationError,
  payload_too_large: ValidationError,
  unsupported_media_type: ValidationError,
  headers_too_large: ValidationError,
  unauthorized: AuthError,
  forbidden: AuthError,
  not_found: NotFoundError,
  conflict: ConflictError,
  already_exists: ConflictError,
  field_owned_elsewhere: ConflictError,
  precondition_failed: ConflictError,
  revision_compacted: CompactedError,
  too_many_requests: UnavailableError,
  request_timeout: UnavailableError,
  unavailable: UnavailableError,
  slow_consumer: UnavailableError,
  too_many_connections: UnavailableError,
  agent_error: AgentError,
  agent_not_connected: AgentError,
  internal: ServerError,
  login_failed: LoginError,
  sign_in_refused: LoginError,
  authorization_pending: LoginError,
  slow_down: LoginError,
  access_denied: LoginError,
  expired_token: LoginError,
  network_error: TransportError,
  stream_idle: TransportError,
  invalid_response: ProtocolError,
  line_too_long: ProtocolError,
};

/** The typed error for a code (wire or client-side). */
export function errorFromCode(init: FleetplaneErrorInit): FleetplaneError {
  return new FAMILY[init.code](init);
}

/**
 * The code a bare status stands for when the body isn't the protocol's error
 * envelope (a proxy's HTML page, an empty 503). Gateway statuses from
 * anything but our server are transient, so they map to `unavailable`.
 */
function codeForStatus(status: number): ErrorCode {
  switch (status) {
    case 400: return 'bad_request';
    case 401: return 'unauthorized';
    case 403: return 'forbidden';
    case 404: return 'not_found';
    case 408: return 'request_timeout';
    case 409: return 'conflict';
    case 410: return 'revision_compacted';
    case 412: return 'precondition_failed';
    case 413: return 'payload_too_large';
    case 415: return 'unsupported_media_type';
    case 429: return 'too_many_requests';
    case 431: return 'headers_too_large';
    case 502:
    case 503:
    case 504: return 'unavailable';
    default: return status >= 500 ? 'internal' : 'bad_request';
  }
}

const SNIPPET = 200;

interface Envelope {
  code: string;
  message: string;
  details?: Record<string, unknown>;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function readEnvelope(parsed: unknown): Envelope | undefined {
  if (!isRecord(parsed) || !isRecord(parsed['error'])) return undefined;
  const e = parsed['error'];
  if (typeof e['code'] !== 'string' || typeof e['message'] !== 'string') return undefined;
  return { code: e['code'], message: e['message'], ...(isRecord(e['details']) ? { details: e['details'] } : {}) };
}

/** Statuses whose `Retry-After` the SDK reads (RFC 9110 gives it meaning on these). */
const RETRY_AFTER_STATUSES: readonly number[] = [429, 503];

/**
 * Turns a non-2xx response into its typed error. A body that isn't the error
 * envelope still yields an error of the status's family; what went wrong
 * reading it is kept as `cause`, and the start of the body in `details.body`.
 * A 429 or 503 carries the `Retry-After` header as `retryAfterMs` (an
 * HTTP-date is counted from `nowMs`).
 */
export async function errorFromResponse(res: Response, nowMs: number = Date.now()): Promise<FleetplaneError> {
  const retryAfterMs = RETRY_AFTER_STATUSES.includes(res.status) ? parseRetryAfter(res.headers.get(HEADERS.retryAfter), nowMs) : undefined;
  const base = { status: res.status, ...(retryAfterMs === undefined ? {} : { retryAfterMs }) };
  let text: string;
  try {
    text = await res.text();
  } catch (cause) {
    return errorFromCode({
      ...base,
      code: codeForStatus(res.status),
      message: `HTTP ${res.status}: the error body could not be read`,
      cause,
    });
  }
  let parsed: unknown;
  let cause: unknown;
  try {
    parsed = text === '' ? undefined : JSON.parse(text);
  } catch (err) {
    cause = err;
  }
  const envelope = readEnvelope(parsed);
  if (envelope && isErrorCode(envelope.code)) {
    return errorFromCode({ ...base, code: envelope.code, message: envelope.message, details: envelope.details });
  }
  const body = text.length > SNIPPET ? `${text.slice(0, SNIPPET)}…` : text;
  if (envelope) {
    // A code this SDK doesn't know yet (a newer server): keep it, classify by status.
    return errorFromCode({
      ...base,
      code: codeForStatus(res.status),
      message: envelope.message,
      details: { ...envelope.details, server_code: envelope.code },
    });
  }
  const what = text === '' ? 'an empty body' : cause === undefined ? 'a body without the error envelope' : 'a body that is not JSON';
  return errorFromCode({
    ...base,
    code: codeForStatus(res.status),
    message: `HTTP ${res.status}${res.statusText ? ` ${res.statusText}` : ''} with ${what}`,
    details: { body },
    cause: cause ?? new ProtocolError({ code: 'invalid_response', status: res.status, message: `unexpected error body: ${body}` }),
  });
}

/** The typed error for a watch stream's `error` event; `status` is the catalog's for the code. */
export function errorFromStreamEvent(code: ErrorCode, message: string): FleetplaneError {
  return errorFromCode({ code, status: ERRORS[code].status, message: message || ERRORS[code].message, details: { from: 'watch_stream' } });
}

/**
 * False for what retrying can't fix without the caller acting: a token that
 * isn't valid or may not do this (401/403), what doesn't exist (404), and a
 * login's answers (a device login's polling handles its own).
 */
export function isRetryable(err: unknown): boolean {
  return !(err instanceof AuthError || err instanceof NotFoundError || err instanceof LoginError);
}
