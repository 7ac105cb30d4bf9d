import { ERRORS, HEADERS } from '../../protocol/index.js';
import type { App } from './app.js';
import { bodyPending } from './pending-body.js';

/**
 * Replies after which the server closes the connection: a 401 (a client
 * without a valid token holds no connection here), and any reply sent while
 * the request's body is still arriving (401s and 403s come before the body
 * is read; a 408 or 413 stops reading it). Without `Connection: close`, Node
 * keeps such a connection to read and discard the rest of the body, for as
 * long as the client takes to send it.
 */
export function closeAfterReply(app: App): void {
  app.addHook('onSend', (req, reply, payload, done) => {
    if (reply.statusCode === ERRORS.unauthorized.status || bodyPending(req.raw)) void reply.header(HEADERS.connection, 'close');
    done(null, payload);
  });
}
