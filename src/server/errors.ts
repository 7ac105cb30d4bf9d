import { ERRORS, type ErrorBody, type ErrorCode } from '../protocol/index.js';

/**
 * The server's one error type. Routes and the store throw it; the HTTP error
 * handler turns it into the catalog's status and body.
 */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  readonly status: number;
  /** Seconds the client should wait before retrying (sent as `Retry-After` with 429 and 503). */
  readonly retryAfterS: number | undefined;

  constructor(
    readonly code: ErrorCode,
    message?: string,
    readonly details?: Record<string, unknown>,
    options?: { cause?: unknown; retryAfterS?: number },
  ) {
    super(message ?? ERRORS[code].message, options);
    this.status = ERRORS[code].status;
    this.retryAfterS = options?.retryAfterS;
  }

  /** `retryAfterS` as the `Retry-After` header carries it: whole seconds, at least 1. */
  retryAfterHeader(): string | undefined {
    return this.retryAfterS === undefined ? undefined : String(Math.max(1, Math.ceil(this.retryAfterS)));
  }

  toBody(): ErrorBody {
    return { error: { code: this.code, message: this.message, ...(this.details ? { details: this.details } : {}) } };
  }
}

export const notFound = (what: string): ApiError => new ApiError('not_found', `${what} not found`);

/** 503 for a request that arrives while the server stops: retry in a second, here or on another replica. */
export const shuttingDown = (message = 'the server is shutting down; retry'): ApiError =>
  new ApiError('unavailable', message, undefined, { retryAfterS: 1 });

export function validationFailed(path: string, expected: string): ApiError {
  return new ApiError('validation_failed', `${path || '/'}: ${expected}`, { path, expected });
}
