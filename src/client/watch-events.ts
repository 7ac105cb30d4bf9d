import { paths, type Watch } from '../protocol/wire.js';
import { errorFromStreamEvent } from './error-mapping.js';
import type { HttpTransport } from './http-transport.js';
import { ndjsonStream, type NdjsonStreamOptions } from './ndjson-stream.js';
import { parseWatchLine, type StreamEvent } from './watch-event-parser.js';
import { unpackGzipEvent } from './gzip-event.js';

/**
 * Options of `watchEvents`. `idleTimeoutMs` is off when undefined;
 * informers use 3 × the bookmark interval.
 */
export type WatchEventsOptions = NdjsonStreamOptions;

/**
 * `POST /api/organizations/{org}/events`, read as NDJSON. Yields events in
 * stream order, a `gzip` event as the event it stands for. Throws: the typed error of a non-2xx answer (CompactedError
 * for 410), the typed error of a server `error` event, ProtocolError for a
 * line that isn't a protocol event, TransportError when the connection breaks
 * or stays idle. Returns when the signal aborts, the consumer stops, or the
 * server ends the stream without an error event.
 */
export function watchEvents(
  transport: HttpTransport,
  org: string,
  watches: readonly Watch[],
  opts: WatchEventsOptions = {},
): AsyncGenerator<StreamEvent, void, undefined> {
  return ndjsonStream(
    transport,
    {
      request: { method: 'POST', path: paths.events(org), body: watches },
      what: 'watch stream',
      parse: (line) => {
        const event = parseWatchLine(line);
        if (event.type === 'error') throw errorFromStreamEvent(event.value.code, event.value.message);
        if (event.type === 'gzip') return unpackGzipEvent(event, line);
        return event;
      },
    },
    opts,
  );
}
