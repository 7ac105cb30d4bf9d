import { startServer, type FleetServer, type Settings } from '../../../src/server/index.js';
import { metricSum } from '../../server/support/server-metric.js';
import type { SignalBus } from '../../../src/server/bus/index.js';
import { createDatabase } from '../../support/postgres-server.js';
import { Harness, pgAdminUrl, type BackendName } from '../../server/fixtures.js';
import type { WatchTarget } from './watch-client.js';

/** Defaults for watch tests: quiet, and no periodic work unless a test asks for it. */
const QUIET: Partial<Settings> = {
  logLevel: 'silent',
  host: '127.0.0.1',
  port: 0,
  // Long intervals, so a lost signal shows as a stall instead of being papered over.
  safetyCheckInterval: 3600,
  revocationCheckInterval: 3600,
  bookmarkInterval: 3600,
  compactionInterval: 3600,
  // No background queries: tests count them.
  replicaLeaseTtl: 3600,
  busHelloInterval: 3600,
};

/** A listening server (watch streams need real sockets) plus the REST harness. */
export class WatchServer {
  readonly h: Harness;

  constructor(readonly server: FleetServer) {
    this.h = new Harness(server);
  }

  /**
   * The running server's settings. The engine reads some when it uses them:
   * `tailCacheSize` when an organization's cache is made, `watchBufferLimit`
   * and `slowConsumerTimeout` when a stream opens; so a test may change those
   * between cases instead of starting another server.
   */
  get settings(): Settings {
    return this.server.ctx.settings;
  }

  get url(): string {
    const url = this.server.url;
    if (url === undefined) throw new Error('the watch test server is not listening');
    return url;
  }

  /** Where to watch `org`: as the admin, or with `token` when given (an undefined token sends none). */
  target(org: string, ...token: [] | [string | undefined]): WatchTarget {
    return { url: this.url, org, token: token.length === 0 ? this.h.admin : token[0] };
  }

  /** Sum of a metric's values (all label sets, or those matching `labels`). */
  async metric(name: string, labels: Record<string, string> = {}): Promise<number> {
    return metricSum(this.server, name, labels);
  }

  close(): Promise<void> {
    return this.server.close();
  }
}

export async function startWatchServer(
  backend: BackendName,
  overrides: Partial<Settings> = {},
  opts: { bus?: SignalBus } = {},
): Promise<WatchServer> {
  const storage: Partial<Settings> = backend === 'pglite' ? { memory: true } : { databaseUrl: await createDatabase(pgAdminUrl()) };
  const server = await startServer({ ...QUIET, ...storage, ...overrides }, { listen: true, ...(opts.bus ? { bus: opts.bus } : {}) });
  return new WatchServer(server);
}

/** Polls `check` until it returns true; throws with `what` when `timeoutMs` passes first. */
export async function eventually(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

export function delay(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
