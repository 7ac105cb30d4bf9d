import type { Socket } from 'node:net';
import type { Logger } from 'pino';
import { ApiError } from '../errors.js';
import { rawErrorResponse } from './raw-error-response.js';

/** What Node's HTTP parser reports, before any request exists for Fastify to answer. */
function toApiError(err: Error & { code?: string }): ApiError {
  switch (err.code) {
    case 'HPE_HEADER_OVERFLOW':
      return new ApiError('headers_too_large');
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new ApiError('request_timeout');
    default:
      return new ApiError('bad_request', 'the request is not valid HTTP/1.1');
  }
}

/**
 * Answers what Node's HTTP parser refuses (oversized headers, a timeout,
 * malformed HTTP) with the catalog's error body. Fastify's default handler
 * writes a body of its own shape, which clients can't read as an error.
 */
export function clientErrorHandler(logger: Logger): (err: Error & { code?: string }, socket: Socket) => void {
  return (err, socket) => {
    // A reset connection has no one left to answer.
    if (err.code === 'ECONNRESET' || socket.destroyed) return;
    const api = toApiError(err);
    logger.debug({ err, code: api.code }, 'client error');
    if (socket.writable) socket.write(rawErrorResponse(api));
    socket.destroy(err);
  };
}
