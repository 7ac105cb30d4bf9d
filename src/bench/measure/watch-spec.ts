import { HEADERS, bearerAuthorization, paths } from '../../protocol/index.js';
import { BENCH_ADMIN_TOKEN } from '../server/fleet-server.js';
import type { Endpoint, WatchSpec } from '../load/messages.js';

/** Watch streams on one organization, resuming from `gtRevision` with `at_tail` (an agent coming back). */
export function fleetWatchSpec(endpoints: Endpoint[], org: string, gtRevision: number): WatchSpec {
  return { endpoints, path: paths.events(org), headers: { [HEADERS.authorization]: bearerAuthorization(BENCH_ADMIN_TOKEN) }, gtRevision, atTail: true };
}

/**
 * How the watchers of a fan-out run open their streams:
 * - `tail`: resuming at the head with `at_tail` (an agent coming back), admin token;
 * - `list-admin`: an initial list (`gt_revision` 0, no `at_tail`), admin token;
 * - `list-org`: an initial list with an organization token of role `read`.
 */
export const WATCH_SETUPS = ['tail', 'list-admin', 'list-org'] as const;
export type WatchSetup = (typeof WATCH_SETUPS)[number];

/** The watch spec of `setup` on `org` at `head`; `orgToken` is the read token `list-org` opens with. */
export function setupWatchSpec(setup: WatchSetup, endpoints: Endpoint[], org: string, head: number, orgToken: string | undefined): WatchSpec {
  if (setup === 'tail') return fleetWatchSpec(endpoints, org, head);
  const token = setup === 'list-org' ? orgToken : BENCH_ADMIN_TOKEN;
  if (token === undefined) throw new Error(`watch setup ${setup} needs an organization token`);
  return { endpoints, path: paths.events(org), headers: { [HEADERS.authorization]: bearerAuthorization(token) }, gtRevision: 0, atTail: false };
}

export function endpointOf(url: string): Endpoint {
  const u = new URL(url);
  return { host: u.hostname, port: Number(u.port) };
}
