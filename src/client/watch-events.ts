import { MEDIA, paths, type Watch } from '../protocol/index.js';
import { errorFromStreamEvent } from './error-mapping.js';
import { FleetplaneError, ProtocolError, TransportError } from './errors.js';
import { describe, type HttpTransport } from './http-transport.js';
import { readLines } from './ndjson-reader.js';
import { parseWatchLine, type StreamEvent } from './watch-event-parser.js';

export interface WatchEventsOptions {
  /** Aborting ends the iteration normally (no error). */
  signal?: AbortSignal | undefined;
  /**
   * Silence after which the stream counts as dead: TransportError
   * `stream_idle` is thrown. Time spent in the consumer doesn't count.
   * Off when undefined; informers use 3 × the bookmark interval.
   */
  idleTimeoutMs?: number | undefined;
  /** Bound of one line (default 16 MiB); beyond it ProtocolError `line_too_long`. */
  maxLineBytes?: number | undefined;
  /** Called once the server accepted the watch (200), before the first event. */
  onOpen?: (() => void) | undefined;
}

/**
 * `POST /api/organizations/{org}/events`, read as NDJSON. Yields events in
 * stream order. Throws: the typed error of a non-2xx answer (CompactedError
 * for 410), the typed error of a server `error` event, ProtocolError for a
 * line that isn't a protocol event, TransportError when the connection breaks
 * or stays idle. Returns when the signal aborts, the consumer stops, or the
 * server ends the stream without an error event.
 */
export async function* watchEvents(
  transport: HttpTransport,
  org: string,
  watches: readonly Watch[],
  opts: WatchEventsOptions = {},
): AsyncGenerator<StreamEvent, void, undefined> {
  const user = opts.signal;
  if (user?.aborted) return;
  const conn = new AbortController();
  const onAbort = (): void => conn.abort(user?.reason);
  user?.addEventListener('abort', onAbort, { once: true });

  const idleMs = opts.idleTimeoutMs;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let idle: TransportError | undefined;
  const disarm = (): void => {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
  };
  const arm = (): void => {
    disarm();
    if (idleMs === undefined) return;
    timer = setTimeout(() => {
      idle = new TransportError({ code: 'stream_idle', message: `watch stream sent nothing for ${idleMs} ms` });
      conn.abort(idle);
    }, idleMs);
  };
  const failure = (err: unknown): unknown => {
    if (idle) return idle;
    if (err instanceof FleetplaneError) return err;
    return new TransportError({ code: 'network_error', message: `watch stream broke: ${describe(err)}`, cause: err });
  };

  try {
    arm();
    let res: Response;
    try {
      res = await transport.send({ method: 'POST', path: paths.events(org), body: watches, accept: MEDIA.watch, signal: conn.signal });
    } catch (err) {
      if (user?.aborted) return;
      throw failure(err);
    }
    if (!res.body) throw new ProtocolError({ code: 'invalid_response', status: res.status, message: 'watch answer without a body' });
    opts.onOpen?.();
    arm();
    try {
      for await (const line of readLines(res.body, { maxLineBytes: opts.maxLineBytes })) {
        if (line === '') {
          arm();
          continue;
        }
        const event = parseWatchLine(line);
        if (event.type === 'error') throw errorFromStreamEvent(event.value.code, event.value.message);
        disarm();
        yield event;
        arm();
      }
    } catch (err) {
      if (user?.aborted) return;
      throw failure(err);
    }
  } finally {
    disarm();
    user?.removeEventListener('abort', onAbort);
    // Closes the connection when the consumer stopped early.
    conn.abort();
  }
}
