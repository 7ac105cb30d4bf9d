import type { IncomingMessage } from 'node:http';
import { HEADERS } from '../../protocol/index.js';

/** True when the request announces a body (RFC 9112 section 6.3: a Transfer-Encoding, or a Content-Length above 0). */
export function hasBody(req: IncomingMessage): boolean {
  if (req.headers[HEADERS.transferEncoding] !== undefined) return true;
  const length = req.headers[HEADERS.contentLength];
  return length !== undefined && length !== '0';
}

/** True while part of the request's body has still to arrive. */
export function bodyPending(req: IncomingMessage): boolean {
  // `=== false`: requests made by Fastify's inject() have no `complete`, and no connection to hold.
  return hasBody(req) && req.complete === false;
}
