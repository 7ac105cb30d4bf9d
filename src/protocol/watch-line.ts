import type { EventType, WatchKind } from './watch.js';

/**
 * The JSON text of a watch line up to its value:
 * `{"kind":"<kind>","type":"<type>","value":` (no `kind` for the
 * stream-level `bookmark` and `error`). For writers that build lines by hand
 * instead of serializing whole events (the server encodes each event once for
 * every watcher; benchmarks size lines): they append the value's JSON and `}`.
 */
export function watchLineHead(type: EventType, kind?: WatchKind): string {
  const typeMember = `"type":${JSON.stringify(type)},"value":`;
  return kind === undefined ? `{${typeMember}` : `{"kind":${JSON.stringify(kind)},${typeMember}`;
}
