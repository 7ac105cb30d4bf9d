import type { RestartableServer } from '../server/restartable-server.js';
import { sleep } from '../../util/sleep.js';
import { SETTLE_MS } from './raw-floor-run.js';
import { treeMemory } from './tree-memory.js';

/** The server's resident memory (its whole process tree, from /proc), as-is and after a full GC. */
export interface RssReading {
  rssBytes: number;
  rssAfterGcBytes: number;
  /** The same two readings as PSS: pages the processes share (an embedded PostgreSQL's shared buffers) counted once. */
  pssBytes: number;
  pssAfterGcBytes: number;
  /** The first PSS reading by kind of process (TreeMemory.pssByKind). */
  pssByKind: Record<string, number>;
}

/**
 * RSS after SETTLE_MS, then again after a full GC in every server process
 * (SIGUSR2 → gc(), see server/gc-hook.ts). With `gcFirst` a GC runs before
 * the first reading too, so a baseline carries no start-up garbage.
 */
export async function serverRss(server: RestartableServer, gcFirst: boolean, signal: AbortSignal): Promise<RssReading> {
  if (gcFirst) await server.current.collectGarbage();
  await sleep(SETTLE_MS, signal);
  signal.throwIfAborted();
  const before = treeMemory(server.current.pid);
  await server.current.collectGarbage();
  const after = treeMemory(server.current.pid);
  return { rssBytes: before.rssBytes, rssAfterGcBytes: after.rssBytes, pssBytes: before.pssBytes, pssAfterGcBytes: after.pssBytes, pssByKind: before.pssByKind };
}

/** Server memory per connected agent from PSS readings taken before and after the agents connected. */
export interface PssFigures {
  idleBytes: number;
  heldBytes: number;
  perAgent: number;
  perAgentAfterGc: number;
  /** Growth (held − idle) by kind of process, bytes: which processes the agents' memory is in. */
  growthByKind: Record<string, number>;
}

export function pssFigures(n: number, idle: RssReading, held: RssReading): PssFigures {
  return {
    idleBytes: idle.pssBytes,
    heldBytes: held.pssBytes,
    perAgent: n > 0 ? (held.pssBytes - idle.pssBytes) / n : Number.NaN,
    perAgentAfterGc: n > 0 ? (held.pssAfterGcBytes - idle.pssAfterGcBytes) / n : Number.NaN,
    growthByKind: Object.fromEntries(
      [...new Set([...Object.keys(idle.pssByKind), ...Object.keys(held.pssByKind)])].map((k) => [k, (held.pssByKind[k] ?? 0) - (idle.pssByKind[k] ?? 0)]),
    ),
  };
}
