import { PassThrough } from 'node:stream';
import { ApiError } from '../errors.js';
import type { App } from './app.js';
import { bodyPending } from './pending-body.js';

/**
 * A request body must arrive within `timeoutS` of the server starting to
 * read it (after authentication, which never waits for it). At the limit
 * the body parser fails with 408 `request_timeout`, and the reply closes
 * the connection (connection-close.ts: the body is still pending), so a
 * client dribbling its body holds a connection for `timeoutS` at most.
 * A body that arrived with the headers costs no timer.
 */
export function limitBodyTime(app: App, timeoutS: number): void {
  app.addHook('preParsing', (req, reply, payload, done) => {
    if (!bodyPending(req.raw)) {
      done(null, payload);
      return;
    }
    const timed = new PassThrough();
    const timer = setTimeout(() => {
      payload.unpipe(timed);
      timed.destroy(new ApiError('request_timeout', `the request body did not arrive within ${timeoutS} s`));
    }, timeoutS * 1000);
    const stop = (): void => clearTimeout(timer);
    timed.once('end', stop);
    timed.once('close', stop);
    reply.raw.once('close', stop);
    // A route may answer without reading the body (a 415, a GET): the timeout is then nobody's error.
    timed.on('error', () => undefined);
    payload.once('error', (err) => timed.destroy(err));
    payload.pipe(timed);
    done(null, timed);
  });
}
