import type { IncomingMessage } from 'node:http';
import { constants, Http2ServerRequest } from 'node:http2';
import { ERRORS, HEADERS } from '../../protocol/index.js';
import type { App } from './app.js';
import { bodyPending } from './pending-body.js';

/**
 * Whether the connection closes after answering `req` with `status`: after a
 * 401 (a client without a valid token holds no connection here), and after
 * any reply sent while the request's body is still arriving (401s and 403s
 * come before the body is read; a 408 or 413 stops reading it). Without
 * `Connection: close`, Node keeps such a connection to read and discard the
 * rest of the body, for as long as the client takes to send it.
 */
export function closesConnection(status: number, req: IncomingMessage): boolean {
  return status === ERRORS.unauthorized.status || bodyPending(req);
}

/**
 * The public listener's replies: `Connection: close` where closesConnection()
 * says so. HTTP/2 has no such header, and its connection carries other
 * requests (every tab's): there a reply sent while the body is still
 * arriving resets that request's stream once sent (RST_STREAM NO_ERROR,
 * RFC 9113 section 8.1), which stops the client sending the rest.
 */
export function closeAfterReply(app: App): void {
  app.addHook('onSend', (req, reply, payload, done) => {
    const raw: IncomingMessage | Http2ServerRequest = req.raw;
    if (raw instanceof Http2ServerRequest) {
      if (bodyPending(req.raw)) reply.raw.once('finish', () => raw.stream.close(constants.NGHTTP2_NO_ERROR));
    } else if (closesConnection(reply.statusCode, req.raw)) void reply.header(HEADERS.connection, 'close');
    done(null, payload);
  });
}

/**
 * Ends `req`'s connection once its reply is sent, for a server that is
 * stopping: `Connection: close` on HTTP/1.1; on HTTP/2, GOAWAY, after which
 * the requests already on the connection are answered and no other starts.
 */
export function closeConnectionAfter(req: IncomingMessage, setHeader: (name: string, value: string) => void): void {
  const raw: IncomingMessage | Http2ServerRequest = req;
  if (raw instanceof Http2ServerRequest) {
    const session = raw.stream.session;
    if (session && !session.closed) session.close();
  } else setHeader(HEADERS.connection, 'close');
}
