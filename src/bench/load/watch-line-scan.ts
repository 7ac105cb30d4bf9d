import { WATCH_KINDS, watchLineHead, type EventType, type WatchKind } from '../../protocol/index.js';

/** What a simulated agent needs from one watch line. */
export type ScannedLine =
  | { type: 'change' | 'patch' | 'delete' | 'gzip' | 'tail'; kind: number; revision: number }
  | { type: 'bookmark'; revision: number }
  | { type: 'error'; code: string }
  | { type: 'unparsed' };

const REVISION = '"revision":';
const CODE = /"code":"([a-z_]+)"/;

interface Prefix {
  text: string;
  type: EventType;
  kind: number;
}

// Every line starts with one of these heads (the server builds them the same way); the most frequent first.
const PREFIXES: readonly Prefix[] = [
  ...(['change', 'patch', 'gzip', 'tail', 'delete'] as const).flatMap((type) => WATCH_KINDS.map((k, kind) => ({ text: watchLineHead(type, k), type, kind }))),
  { text: watchLineHead('bookmark'), type: 'bookmark', kind: -1 },
  { text: watchLineHead('error'), type: 'error', kind: -1 },
];

/** Index of `kind` in WATCH_KINDS (the order of an agent's per-kind state). */
export function kindIndex(kind: WatchKind): number {
  return WATCH_KINDS.indexOf(kind);
}

/**
 * Reads a watch line's event type, kind and revision without parsing its
 * JSON: the head tells type and kind, and the revision is a patch's or a
 * gzip event's first member, else the last `"revision":` of the line (an object's own
 * revision, or a tail's or bookmark's value).
 */
export function scanWatchLine(text: string, start: number, end: number): ScannedLine {
  const p = prefixAt(text, start);
  if (!p) return { type: 'unparsed' };
  if (p.type === 'error') return { type: 'error', code: CODE.exec(text.slice(start, end))?.[1] ?? 'unknown' };
  const afterHead = start + p.text.length + 1;
  const r = (p.type === 'patch' || p.type === 'gzip') && text.startsWith(REVISION, afterHead) ? afterHead : text.lastIndexOf(REVISION, end);
  if (r < start) return { type: 'unparsed' };
  const revision = digitsAt(text, r + REVISION.length, end);
  if (revision < 0) return { type: 'unparsed' };
  if (p.type === 'bookmark') return { type: 'bookmark', revision };
  return { type: p.type, kind: p.kind, revision };
}

// The simulated fleet scans every line of every agent on one core: these two keep it from measuring itself.
/** The head the previous line had: a burst of one kind of event repeats it. */
let lastPrefix = 0;

function prefixAt(text: string, start: number): Prefix | undefined {
  const last = PREFIXES[lastPrefix];
  if (last && text.startsWith(last.text, start)) return last;
  for (let i = 0; i < PREFIXES.length; i++) {
    const p = PREFIXES[i];
    if (p && text.startsWith(p.text, start)) {
      lastPrefix = i;
      return p;
    }
  }
  return undefined;
}

/** The non-negative integer written at `at` (at most 15 digits, before `end`); -1 when there is none. */
function digitsAt(text: string, at: number, end: number): number {
  let n = 0;
  let i = at;
  for (; i < end && i < at + 15; i++) {
    const c = text.charCodeAt(i) - 48;
    if (c < 0 || c > 9) break;
    n = n * 10 + c;
  }
  return i === at ? -1 : n;
}
