import { HEADERS, bearerAuthorization, paths } from '../../protocol/index.js';
import { BENCH_ADMIN_TOKEN } from '../server/fleet-server.js';
import type { Endpoint, WatchSpec } from '../load/messages.js';

/** Watch streams on one organization, resuming from `gtRevision` with `at_tail` (an agent coming back). */
export function fleetWatchSpec(endpoints: Endpoint[], org: string, gtRevision: number): WatchSpec {
  return { endpoints, path: paths.events(org), headers: { [HEADERS.authorization]: bearerAuthorization(BENCH_ADMIN_TOKEN) }, gtRevision, atTail: true };
}

export function endpointOf(url: string): Endpoint {
  const u = new URL(url);
  return { host: u.hostname, port: Number(u.port) };
}
