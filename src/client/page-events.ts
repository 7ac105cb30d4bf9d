import { paths, type Convergence, type PageRequest, type StatusesItems, type StatusSummary } from '../protocol/wire.js';
import { isConvergence } from './convergence-parser.js';
import { errorFromStreamEvent } from './error-mapping.js';
import type { ProtocolError } from './errors.js';
import { gunzip, base64Bytes, unpackGzipEvent } from './gzip-event.js';
import { isRecord } from './guards.js';
import type { HttpTransport } from './http-transport.js';
import { ndjsonStream, type NdjsonStreamOptions } from './ndjson-stream.js';
import { invalidLine, lineObject } from './stream-line.js';
import { parseWatchLine, type StreamEvent } from './watch-event-parser.js';

/** A page stream's `statuses` line, unpacked: with `reset`, every device (replace what you hold); else what changed. */
export interface StatusesUpdate {
  type: 'statuses';
  reset: boolean;
  items: StatusSummary[];
  removed: string[];
}

/** What a page stream yields: watch events (a `gzip` one as the event it stands for), convergence values and statuses. */
export type PageEvent = StreamEvent | { type: 'convergence'; value: Convergence } | StatusesUpdate;

const invalid = (line: string, why: string): ProtocolError => invalidLine('page', line, why);

function isSummary(v: unknown): v is StatusSummary {
  return isRecord(v) && typeof v['id'] === 'string' && typeof v['online'] === 'boolean';
}

function items(line: string, v: unknown): StatusesItems {
  if (!isRecord(v) || !Array.isArray(v['items']) || !Array.isArray(v['removed'])) throw invalid(line, 'statuses without items and removed');
  const { items: list, removed } = v;
  if (!list.every(isSummary) || !removed.every((id) => typeof id === 'string')) throw invalid(line, 'statuses items without id and online');
  return { items: list, removed: removed as string[] };
}

async function parseStatuses(line: string, value: Record<string, unknown>): Promise<StatusesUpdate> {
  const reset = value['reset'];
  if (typeof reset !== 'boolean') throw invalid(line, 'statuses without reset');
  const packed = value['gzip'];
  if (typeof packed !== 'string') return { type: 'statuses', reset, ...items(line, value) };
  let text: string;
  try {
    text = await gunzip(base64Bytes(packed));
  } catch (err) {
    throw invalidLine('page', line, 'gzip data that does not unpack', err);
  }
  return { type: 'statuses', reset, ...items(line, lineObject('page', text)) };
}

/**
 * One line of a page stream (docs/protocol.md "Page stream"). Throws as a
 * watch stream does: the typed error of an `error` line, ProtocolError for a
 * line that is no protocol line (a line is never skipped).
 */
async function parsePageLine(line: string): Promise<PageEvent> {
  const doc = lineObject('page', line);
  const { type, value } = doc;
  if (type === 'convergence') {
    if (!isConvergence(value)) throw invalid(line, 'convergence without revision and counts');
    return { type, value };
  }
  if (type === 'statuses') {
    if (!isRecord(value)) throw invalid(line, 'value is not an object');
    return parseStatuses(line, value);
  }
  const event = parseWatchLine(line);
  if (event.type === 'error') throw errorFromStreamEvent(event.value.code, event.value.message);
  if (event.type === 'gzip') return unpackGzipEvent(event, line);
  return event;
}

/**
 * `POST /api/organizations/{org}/page`, read as NDJSON: yields its lines in
 * order. Throws and returns as `watchEvents` does.
 */
export function pageEvents(transport: HttpTransport, org: string, request: PageRequest, opts: NdjsonStreamOptions = {}): AsyncGenerator<PageEvent, void, undefined> {
  return ndjsonStream(transport, { request: { method: 'POST', path: paths.page(org), body: request }, what: 'page stream', parse: parsePageLine }, opts);
}
