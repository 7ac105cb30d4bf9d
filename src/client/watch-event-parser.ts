import {
  EVENT_TYPES,
  isWatchKind,
  type BookmarkEvent,
  type ChangeEvent,
  type DeleteEvent,
  type GzipEvent,
  type PatchEvent,
  type EventType,
  type TailEvent,
  type WatchEvent,
} from '../protocol/wire.js';
import type { ProtocolError } from './errors.js';
import { errorLineValue, invalidLine, lineObject } from './stream-line.js';
import { isIdentified, isRecord, isRevision } from './guards.js';

/** What a watch stream yields: every event but `error`, which is thrown as a typed error instead. */
export type StreamEvent = ChangeEvent | PatchEvent | DeleteEvent | TailEvent | BookmarkEvent;

const invalid = (line: string, why: string): ProtocolError => invalidLine('watch', line, why);

function isEventType(v: unknown): v is EventType {
  return typeof v === 'string' && (EVENT_TYPES as readonly string[]).includes(v);
}

/**
 * Parses one line of a watch stream (a `gzip` line as itself: see
 * unpackGzipEvent). Anything that isn't a protocol event
 * (not JSON, unknown type, missing kind, id or revision) throws ProtocolError:
 * a line is never skipped. Only the fields the SDK relies on are checked;
 * objects may carry fields this SDK doesn't know.
 */
export function parseWatchLine(line: string): WatchEvent {
  const { type, kind, value } = lineObject('watch', line);
  if (!isEventType(type)) throw invalid(line, 'unknown type');
  if (!isRecord(value)) throw invalid(line, 'value is not an object');
  switch (type) {
    case 'change':
    case 'delete':
      if (!isWatchKind(kind)) throw invalid(line, 'unknown kind');
      if (!isIdentified(value)) throw invalid(line, 'value without id and revision');
      // Shape beyond id and revision is the server's contract (see above).
      return { kind, type, value } as ChangeEvent | DeleteEvent;
    case 'patch': {
      if (!isWatchKind(kind)) throw invalid(line, 'unknown kind');
      const { revision, from_revision: from, id, set } = value;
      if (!isRevision(revision) || !isRevision(from) || from >= revision) throw invalid(line, 'patch without revision and an earlier from_revision');
      if (typeof id !== 'string' || id === '') throw invalid(line, 'patch without id');
      if (!isRecord(set)) throw invalid(line, 'patch whose set is not an object');
      return { kind, type, value: { revision, from_revision: from, id, set } };
    }
    case 'gzip': {
      if (!isWatchKind(kind)) throw invalid(line, 'unknown kind');
      const { revision, data } = value;
      if (!isRevision(revision) || typeof data !== 'string') throw invalid(line, 'gzip without revision and data');
      return { kind, type, value: { revision, data } } as GzipEvent;
    }
    case 'tail':
      if (!isWatchKind(kind)) throw invalid(line, 'unknown kind');
      if (!isRevision(value['revision'])) throw invalid(line, 'tail without revision');
      return { kind, type, value: { revision: value['revision'] } };
    case 'bookmark':
      if (!isRevision(value['revision'])) throw invalid(line, 'bookmark without revision');
      return { type, value: { revision: value['revision'] } };
    case 'error':
      return { type, value: errorLineValue('watch', line, value) };
  }
}
