import { QUERY, RELAY_LIST_EVENT, ROUTES, type RelayEntry, type RelayList } from '../protocol/wire.js';
import type { CallOptions } from './collection.js';
import { errorFromStreamEvent } from './error-mapping.js';
import { isRecord } from './guards.js';
import type { HttpTransport } from './http-transport.js';
import { ndjsonStream, type NdjsonStreamOptions } from './ndjson-stream.js';
import { errorLineValue, invalidLine, lineObject } from './stream-line.js';

function isRelayEntry(v: unknown): v is RelayEntry {
  return (
    isRecord(v) &&
    typeof v['id'] === 'string' &&
    (v['url'] === null || typeof v['url'] === 'string') &&
    typeof v['expires_at'] === 'string'
  );
}

/** Whether `v` is a relay list: `items`, each with `id`, `url` (string or null) and `expires_at`. */
export function isRelayList(v: unknown): v is RelayList {
  return isRecord(v) && Array.isArray(v['items']) && v['items'].every(isRelayEntry);
}

/** One line of `GET /api/relays?watch=true` to its list; the `error` line to its typed error; anything else ProtocolError. */
export function parseRelayListLine(line: string): RelayList {
  const { type, value } = lineObject('relay list', line);
  if (type === RELAY_LIST_EVENT) {
    if (!isRelayList(value)) throw invalidLine('relay list', line, 'value is not a relay list');
    return value;
  }
  if (type === 'error' && isRecord(value)) {
    const error = errorLineValue('relay list', line, value);
    throw errorFromStreamEvent(error.code, error.message);
  }
  throw invalidLine('relay list', line, 'unknown type');
}

/** The server's relays (docs/protocol.md "Relays"): any credential reads them. */
export class RelaysApi {
  constructor(private readonly transport: HttpTransport) {}

  /** `GET /api/relays`: the live relays, oldest replica first. */
  list(opts: CallOptions = {}): Promise<RelayList> {
    return this.transport.json({ method: 'GET', path: ROUTES.relays, signal: opts.signal }, isRelayList, 'the relay list');
  }

  /**
   * `GET /api/relays?watch=true`: the list now, then on every change and
   * after each bookmark interval. One connection, no retry; throws as
   * `watchConvergence` does.
   */
  watch(opts: NdjsonStreamOptions = {}): AsyncGenerator<RelayList, void, undefined> {
    return ndjsonStream(
      this.transport,
      {
        request: { method: 'GET', path: ROUTES.relays, query: { [QUERY.watch]: true } },
        what: 'relay list stream',
        requireWatchMedia: true,
        parse: parseRelayListLine,
      },
      opts,
    );
  }
}
