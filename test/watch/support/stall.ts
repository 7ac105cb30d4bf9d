import { WATCH_KINDS, paths, type WatchEvent } from '../../../src/protocol/index.js';
import type { Watcher } from '../../../src/server/watch/index.js';
import { openWatch, type WatchSpec, type WatchStream } from './watch-client.js';
import { eventually, type WatchServer } from './watch-server.js';
import { bigGroupSpec } from './objects.js';

/** Loopback sockets take several MB before a server's buffer grows; a burst stops here at the latest. */
export const MAX_BURST = 80;

const ALL: WatchSpec[] = WATCH_KINDS.map((kind) => ({ kind }));

/** Bytes of an event's chunk on the wire: `<hex>\r\n<json>\n\r\n`. */
export function chunkBytes(e: WatchEvent): number {
  const body = Buffer.byteLength(JSON.stringify(e)) + 1;
  return body.toString(16).length + 2 + body + 2;
}

/** Opens a stream and returns it with its server-side watcher (the one that wasn't there before). */
export async function openTracked(
  ws: WatchServer,
  org: string,
  opts: { paused: boolean; watches?: WatchSpec[] },
): Promise<{ stream: WatchStream; watcher: Watcher }> {
  const before = new Set(ws.server.watch.list());
  const stream = await openWatch(ws.target(org), opts.watches ?? ALL, { paused: opts.paused });
  let watcher: Watcher | undefined;
  await eventually(() => (watcher = ws.server.watch.list().find((w) => !before.has(w))) !== undefined, 'the new watcher is registered');
  if (!watcher) throw new Error('unreachable');
  return { stream, watcher };
}

/** Creates a security group whose event is about 340 KB; returns its id. */
export async function createBigGroup(ws: WatchServer, org: string, seed: number): Promise<string> {
  const g = await ws.h.ok<{ id: string }>(201, 'POST', paths.securityGroups(org), { body: bigGroupSpec(seed) });
  return g.id;
}

export interface Burst {
  /** Id of the last object written. */
  last: string;
  /** Largest server-side buffer of the watcher seen after any write. */
  maxBuffered: number;
  writes: number;
}

/** Writes big events until `done` (checked after each write) or MAX_BURST writes. */
export async function burst(ws: WatchServer, org: string, watched: Watcher, done: () => boolean): Promise<Burst> {
  let last = '';
  let maxBuffered = 0;
  let writes = 0;
  while (writes < MAX_BURST && !done()) {
    last = await createBigGroup(ws, org, writes++);
    maxBuffered = Math.max(maxBuffered, watched.buffered);
  }
  return { last, maxBuffered, writes };
}
