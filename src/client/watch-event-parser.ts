import {
  EVENT_TYPES,
  isErrorCode,
  isWatchKind,
  type BookmarkEvent,
  type ChangeEvent,
  type DeleteEvent,
  type EventType,
  type TailEvent,
  type WatchEvent,
} from '../protocol/index.js';
import { ProtocolError } from './errors.js';
import { isIdentified, isRecord, isRevision } from './guards.js';

/** What a watch stream yields: every event but `error`, which is thrown as a typed error instead. */
export type StreamEvent = ChangeEvent | DeleteEvent | TailEvent | BookmarkEvent;

const SHOWN = 200;

function invalid(line: string, why: string, cause?: unknown): ProtocolError {
  const shown = line.length > SHOWN ? `${line.slice(0, SHOWN)}…` : line;
  return new ProtocolError({
    code: 'invalid_response',
    message: `invalid watch line (${why}): ${shown}`,
    details: { line: shown },
    ...(cause === undefined ? {} : { cause }),
  });
}

function isEventType(v: unknown): v is EventType {
  return typeof v === 'string' && (EVENT_TYPES as readonly string[]).includes(v);
}

/**
 * Parses one line of a watch stream. Anything that isn't a protocol event
 * (not JSON, unknown type, missing kind, id or revision) throws ProtocolError:
 * a line is never skipped. Only the fields the SDK relies on are checked;
 * objects may carry fields this SDK doesn't know.
 */
export function parseWatchLine(line: string): WatchEvent {
  let doc: unknown;
  try {
    doc = JSON.parse(line);
  } catch (err) {
    throw invalid(line, 'not JSON', err);
  }
  if (!isRecord(doc)) throw invalid(line, 'not an object');
  const { type, kind, value } = doc;
  if (!isEventType(type)) throw invalid(line, 'unknown type');
  if (!isRecord(value)) throw invalid(line, 'value is not an object');
  switch (type) {
    case 'change':
    case 'delete':
      if (!isWatchKind(kind)) throw invalid(line, 'unknown kind');
      if (!isIdentified(value)) throw invalid(line, 'value without id and revision');
      // Shape beyond id and revision is the server's contract (see above).
      return { kind, type, value } as ChangeEvent | DeleteEvent;
    case 'tail':
      if (!isWatchKind(kind)) throw invalid(line, 'unknown kind');
      if (!isRevision(value['revision'])) throw invalid(line, 'tail without revision');
      return { kind, type, value: { revision: value['revision'] } };
    case 'bookmark':
      if (!isRevision(value['revision'])) throw invalid(line, 'bookmark without revision');
      return { type, value: { revision: value['revision'] } };
    case 'error': {
      const { code, message } = value;
      if (!isErrorCode(code)) throw invalid(line, 'error with an unknown code');
      return { type, value: { code, message: typeof message === 'string' ? message : '' } };
    }
  }
}
