import type { IncomingMessage } from 'node:http';
import { HEADERS } from '../../protocol/index.js';

/** True while part of the request's body has still to arrive. */
export function bodyPending(req: IncomingMessage): boolean {
  // `!== false`: requests made by Fastify's inject() have no `complete`, and no connection to hold.
  if (req.complete !== false) return false;
  // RFC 9112 section 6.3: without a Transfer-Encoding, the Content-Length (absent: 0) is the body.
  if (req.headers[HEADERS.transferEncoding] !== undefined) return true;
  const length = Number(req.headers[HEADERS.contentLength] ?? 0);
  // Node marks a request complete only after the callbacks for its last bytes have run, so a body that came with
  // its headers (an agent's status PUT) is still "incomplete" here though it is all buffered, unread.
  return req.readableLength < length;
}
