import { HEADERS, MEDIA } from '../protocol/wire.js';
import { FleetplaneError, ProtocolError, TransportError } from './errors.js';
import { describe, type HttpRequest, type HttpTransport } from './http-transport.js';
import { readLines } from './ndjson-reader.js';

export interface NdjsonStreamOptions {
  /** Aborting ends the iteration normally (no error). */
  signal?: AbortSignal | undefined;
  /**
   * Silence after which the stream counts as dead: TransportError
   * `stream_idle` is thrown. Time spent in the consumer doesn't count.
   * Off when undefined.
   */
  idleTimeoutMs?: number | undefined;
  /** Bound of one line (default 16 MiB); beyond it ProtocolError `line_too_long`. */
  maxLineBytes?: number | undefined;
  /** Called once the server accepted the request (2xx), before the first item. */
  onOpen?: (() => void) | undefined;
}

/** What one stream is: its request, how a line becomes an item, and its name in messages. */
export interface NdjsonStreamSpec<T> {
  request: Omit<HttpRequest, 'signal' | 'accept'>;
  /**
   * One non-empty line to its item. Throws for a line that isn't one
   * (ProtocolError) and for the stream's `error` line (its typed error).
   * A promise (a line that must be unpacked first) is awaited before the
   * next line is read, so items keep the stream's order.
   */
  parse: (line: string) => T | Promise<T>;
  /** e.g. `watch stream`. */
  what: string;
  /**
   * When set, a 2xx answer whose Content-Type isn't `application/json;stream=watch`
   * fails with ProtocolError `invalid_response` (a server that doesn't know
   * the stream answered something else).
   */
  requireWatchMedia?: boolean;
}

/** `application/json; stream=watch` and `application/json;stream=watch` are the same media type. */
function isWatchMedia(contentType: string | null): boolean {
  return contentType !== null && contentType.replace(/\s+/g, '').toLowerCase() === MEDIA.watch;
}

/**
 * Sends a streaming request (`Accept: application/json;stream=watch`) and
 * yields its NDJSON lines as items, in order; empty lines only keep the
 * stream alive. Throws: the typed error of a non-2xx answer, whatever
 * `parse` throws, TransportError when the connection breaks or stays idle.
 * Returns when the signal aborts, the consumer stops (the connection is then
 * closed), or the server ends the stream.
 */
export async function* ndjsonStream<T>(
  transport: HttpTransport,
  spec: NdjsonStreamSpec<T>,
  opts: NdjsonStreamOptions = {},
): AsyncGenerator<T, void, undefined> {
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
      idle = new TransportError({ code: 'stream_idle', message: `${spec.what} sent nothing for ${idleMs} ms` });
      conn.abort(idle);
    }, idleMs);
  };
  const failure = (err: unknown): unknown => {
    if (idle) return idle;
    if (err instanceof FleetplaneError) return err;
    return new TransportError({ code: 'network_error', message: `${spec.what} broke: ${describe(err)}`, cause: err });
  };

  try {
    arm();
    let res: Response;
    try {
      res = await transport.send({ ...spec.request, accept: MEDIA.watch, signal: conn.signal });
    } catch (err) {
      if (user?.aborted) return;
      throw failure(err);
    }
    if (!res.body) throw new ProtocolError({ code: 'invalid_response', status: res.status, message: `${spec.what}: answer without a body` });
    const media = res.headers.get(HEADERS.contentType);
    if (spec.requireWatchMedia && !isWatchMedia(media)) {
      // Only releases the connection: the error below says what went wrong.
      await res.body.cancel().catch(() => undefined);
      throw new ProtocolError({
        code: 'invalid_response',
        status: res.status,
        message: `${spec.what}: the server answered ${media ?? 'without a content type'}, not ${MEDIA.watch} (a server without this stream?)`,
      });
    }
    opts.onOpen?.();
    arm();
    try {
      for await (const line of readLines(res.body, { maxLineBytes: opts.maxLineBytes })) {
        if (line === '') {
          arm();
          continue;
        }
        const parsed = spec.parse(line);
        const item = parsed instanceof Promise ? await parsed : parsed;
        disarm();
        // A line already read when the signal aborted is not delivered: nothing follows an abort.
        if (user?.aborted) return;
        yield item;
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
