import { STATUS_CODES } from 'node:http';
import { HEADERS, MEDIA } from '../../protocol/index.js';
import type { ApiError } from '../errors.js';
import { NO_SNIFF } from './no-sniff.js';

/**
 * A whole HTTP/1.1 error response with the catalog's body and
 * `Connection: close`, for writing straight to a socket when there is no
 * request (yet) for Fastify to answer.
 */
export function rawErrorResponse(api: ApiError): string {
  const body = JSON.stringify(api.toBody());
  const retryAfter = api.retryAfterHeader();
  return (
    `HTTP/1.1 ${api.status} ${STATUS_CODES[api.status] ?? ''}\r\n` +
    `${HEADERS.contentType}: ${MEDIA.json}\r\n${HEADERS.contentLength}: ${Buffer.byteLength(body)}\r\n` +
    (retryAfter === undefined ? '' : `${HEADERS.retryAfter}: ${retryAfter}\r\n`) +
    `${HEADERS.contentTypeOptions}: ${NO_SNIFF}\r\n${HEADERS.connection}: close\r\n\r\n${body}`
  );
}
