import { SOCKETS_PER_AGENT } from '../load/agent-messages.js';
import { PUT_CONNECTIONS_PER_WORKER, agentWorkersFor } from '../load/agent-pool.js';
import type { StorageName } from '../server/restartable-server.js';

/** Files a server process needs besides agent sockets: database, harness connections, listeners. */
export const SERVER_FILE_RESERVE = 500;
/** `--workers` spreads connections round-robin, not exactly evenly: leave this share of each budget free. */
const WORKER_HEADROOM = 0.85;

/** How one (storage, N) is run here. */
export type RunnablePlan = { storage: StorageName; n: number; runnable: true; serverWorkers: number; serverSockets: number; reason: string };
/** A plan, or a (storage, N) not run and why (its storage is missing here). */
export type FleetPlan = RunnablePlan | { storage: StorageName; n: number; runnable: false; serverSockets: number; reason: string };

/**
 * N agents hold 2N sockets on the server (watch stream and tunnel), plus the
 * load workers' PUT pools. One process holds at most `openFiles` files. Past
 * that, the server runs `serve --workers W` (on either storage: the embedded
 * PostgreSQL serves several processes too).
 */
export function planFleet(storage: StorageName, n: number, openFiles: number, socketsPerWorker: number): RunnablePlan {
  const serverSockets = n * SOCKETS_PER_AGENT + agentWorkersFor(n, socketsPerWorker) * PUT_CONNECTIONS_PER_WORKER;
  const budget = openFiles - SERVER_FILE_RESERVE;
  const need = `${n.toLocaleString('en-US')} agents hold ${serverSockets.toLocaleString('en-US')} sockets on the server (watch + tunnel each, plus the PUT pools)`;
  if (serverSockets <= budget) return { storage, n, runnable: true, serverWorkers: 1, serverSockets, reason: `${need}: one process (limit ${openFiles.toLocaleString('en-US')} open files)` };
  const workers = Math.ceil(serverSockets / (budget * WORKER_HEADROOM));
  return { storage, n, runnable: true, serverWorkers: workers, serverSockets, reason: `${need}: over one process's ${openFiles.toLocaleString('en-US')} open files, so 'serve --workers ${workers}'` };
}
