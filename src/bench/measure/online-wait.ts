import { paths, type Convergence } from '../../protocol/index.js';
import { nowMs } from '../clock.js';
import type { FleetApi } from '../http-api.js';
import { sleep } from '../../util/sleep.js';

/** How long it took the convergence's `online` count to reach N. */
export interface OnlineWait {
  /** From the start of the wait; NaN when it didn't within the timeout. */
  ms: number;
  /** The last `online` read (NaN when the answer has no `online` field). */
  online: number;
  of: number;
}

const POLL_MS = 100;

/**
 * Polls `GET .../convergence` (admin token) every 100 ms until `online` ≥ N,
 * at most `timeoutMs`: the server's count of devices holding a tunnel or a
 * watch stream on a live replica.
 */
export async function awaitOnline(api: FleetApi, org: string, n: number, timeoutMs: number): Promise<OnlineWait> {
  const t0 = nowMs();
  let online = Number.NaN;
  while (nowMs() - t0 < timeoutMs) {
    const res = await api.request('GET', paths.convergence(org)).catch(() => undefined);
    if (res?.status === 200) {
      const v = JSON.parse(res.body) as Partial<Convergence>;
      online = v.online === undefined ? Number.NaN : Number(v.online);
      if (online >= n) return { ms: res.doneAt - t0, online, of: n };
    }
    await sleep(POLL_MS);
  }
  return { ms: Number.NaN, online, of: n };
}
