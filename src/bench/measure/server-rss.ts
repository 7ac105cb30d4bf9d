import type { RestartableServer } from '../server/restartable-server.js';
import { sleep } from '../../util/periodic.js';
import { SETTLE_MS } from './raw-floor-run.js';

/** The server's resident memory (its whole process tree, from /proc), as-is and after a full GC. */
export interface RssReading {
  rssBytes: number;
  rssAfterGcBytes: number;
}

/**
 * RSS after SETTLE_MS, then again after a full GC in every server process
 * (SIGUSR2 → gc(), see server/gc-hook.ts). With `gcFirst` a GC runs before
 * the first reading too, so a baseline carries no start-up garbage.
 */
export async function serverRss(server: RestartableServer, gcFirst: boolean, signal: AbortSignal): Promise<RssReading> {
  if (gcFirst) await server.current.collectGarbage();
  await sleep(SETTLE_MS, signal);
  const rssBytes = server.current.procStats().rssBytes;
  await server.current.collectGarbage();
  return { rssBytes, rssAfterGcBytes: server.current.procStats().rssBytes };
}
