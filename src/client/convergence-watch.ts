import { QUERY, paths, type Convergence } from '../protocol/wire.js';
import { parseConvergenceLine } from './convergence-parser.js';
import { errorFromStreamEvent } from './error-mapping.js';
import type { HttpTransport } from './http-transport.js';
import { ndjsonStream, type NdjsonStreamOptions } from './ndjson-stream.js';

/** Options of `watchConvergence`; `idleTimeoutMs` is off when undefined (`followConvergence` uses 3 × the bookmark interval). */
export type WatchConvergenceOptions = NdjsonStreamOptions;

/**
 * `GET /api/organizations/{org}/convergence?watch=true`: the organization's
 * convergence counts, as a stream. Yields the whole current value at once,
 * then on every change (at most one per 100 ms) and again after each
 * bookmark interval without change. One connection, no retry (see
 * `followConvergence` for that).
 *
 * Throws: the typed error of a non-2xx answer (UnavailableError with
 * `retryAfterMs` for a 429/503 carrying Retry-After), the typed error of the
 * stream's `error` line (UnavailableError `unavailable`: the server is
 * shutting down; AuthError `forbidden`: the token was revoked; NotFoundError:
 * the organization is gone), ProtocolError for a line that isn't a
 * convergence event or an answer that isn't a stream (a server without it),
 * TransportError when the connection breaks or stays idle. Returns when the
 * signal aborts, the consumer stops, or the server ends the stream without
 * an error line.
 */
export function watchConvergence(
  transport: HttpTransport,
  org: string,
  opts: WatchConvergenceOptions = {},
): AsyncGenerator<Convergence, void, undefined> {
  return ndjsonStream(
    transport,
    {
      request: { method: 'GET', path: paths.convergence(org), query: { [QUERY.watch]: true } },
      what: 'convergence stream',
      requireWatchMedia: true,
      parse: (line) => {
        const event = parseConvergenceLine(line);
        if (event.type === 'error') throw errorFromStreamEvent(event.value.code, event.value.message);
        return event.value;
      },
    },
    opts,
  );
}
