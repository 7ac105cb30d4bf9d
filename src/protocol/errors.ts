/**
 * The one catalog of error codes on the wire. Every non-2xx response and every
 * watch `error` event carries one of these codes; the HTTP status and the
 * default message live here too, so server, SDK and docs can't disagree.
 */
export const ERRORS = {
  bad_request: { status: 400, message: 'The request is malformed.' },
  validation_failed: { status: 400, message: 'The request does not match the schema.' },
  policy_invalid: { status: 400, message: 'The policy document does not parse or validate; nothing was changed.' },
  unauthorized: { status: 401, message: 'A valid bearer token is required.' },
  forbidden: { status: 403, message: 'This token may not do that.' },
  not_found: { status: 404, message: 'Not found.' },
  request_timeout: { status: 408, message: 'The request did not arrive in time.' },
  conflict: { status: 409, message: 'The request conflicts with the current state.' },
  already_exists: { status: 409, message: 'Another object already has this name.' },
  field_owned_elsewhere: { status: 409, message: 'This field is owned by another endpoint.' },
  revision_compacted: { status: 410, message: 'The requested revision has been compacted; list again from 0.' },
  precondition_failed: { status: 412, message: 'If-Match does not match the current revision.' },
  policy_test_failed: { status: 422, message: 'A test of the policy document fails; nothing was changed.' },
  payload_too_large: { status: 413, message: 'The request body is too large.' },
  unsupported_media_type: { status: 415, message: 'The request body must be application/json.' },
  too_many_requests: { status: 429, message: 'Too many requests.' },
  headers_too_large: { status: 431, message: 'The request headers are too large.' },
  internal: { status: 500, message: 'Internal server error.' },
  agent_error: { status: 502, message: 'The agent answered with an error.' },
  unavailable: { status: 503, message: 'The service is unavailable; retry.' },
  agent_not_connected: { status: 504, message: 'The agent did not connect in time.' },
  slow_consumer: { status: 503, message: 'The watcher could not keep up; resume from your last revision.' },
  too_many_connections: { status: 503, message: 'The server holds as many connections as it accepts; retry later.' },
  login_failed: { status: 401, message: 'The login could not be completed; start again.' },
  sign_in_refused: { status: 403, message: 'The identity provider vouched for you, but this server does not let you sign in.' },
  authorization_pending: { status: 400, message: 'The device login is not approved yet; poll again after the interval.' },
  slow_down: { status: 400, message: 'Poll less often: add 5 seconds to the interval.' },
  access_denied: { status: 403, message: 'The user refused the device login.' },
  expired_token: { status: 410, message: 'The device login expired; start again.' },
} as const satisfies Record<string, { status: number; message: string }>;

export type ErrorCode = keyof typeof ERRORS;

export const ERROR_CODES = Object.keys(ERRORS) as ErrorCode[];

/** Body of every non-2xx response. */
export interface ErrorBody {
  error: { code: ErrorCode; message: string; details?: Record<string, unknown> };
}

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && Object.prototype.hasOwnProperty.call(ERRORS, value);
}
