import type { IncomingMessage } from 'node:http';
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

/** The public listener's replies: `Connection: close` where closesConnection() says so. */
export function closeAfterReply(app: App): void {
  app.addHook('onSend', (req, reply, payload, done) => {
    if (closesConnection(reply.statusCode, req.raw)) void reply.header(HEADERS.connection, 'close');
    done(null, payload);
  });
}
