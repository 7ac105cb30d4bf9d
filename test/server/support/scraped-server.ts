import { HEADERS, MEDIA, QUERY, ROUTES, paths } from '../../../src/protocol/index.js';
import { startServer, type FleetServer } from '../../../src/server/index.js';
import { tunnelUrl } from '../../../src/agent/tunnel/index.js';
import { createDatabase } from '../../support/postgres-server.js';
import { Fleet, eventually, http, metric, startAgent, type TestAgent } from '../../gateway/support.js';
import { pgAdminUrl } from '../fixtures.js';

/** A listening server in the state where every metric family has samples. */
export interface ScrapedServer {
  readonly server: FleetServer;
  readonly base: string;
  /** True when the bus is a reliable driver (PostgreSQL present), so the bus metrics are in the scrape. */
  readonly reliableBus: boolean;
  /** GET /metrics as Prometheus scrapes it. */
  scrape(): Promise<string>;
  close(): Promise<void>;
}

/**
 * Starts a server that listens on loopback (process metrics on) with what
 * each metrics file counts: a reliable bus (PostgreSQL's, when PostgreSQL is
 * installed), an organization with an enrolled device, its agent tunnel, a
 * watch stream, a convergence stream, and an ACK.
 */
export async function startScrapedServer(): Promise<ScrapedServer> {
  const adminUrl = pgAdminUrl();
  if (adminUrl === '') process.stderr.write('\n*** PostgreSQL is absent: the scraped server runs on PGlite with the memory bus (no bus metrics). ***\n');
  const storage = adminUrl === '' ? { memory: true } : { databaseUrl: await createDatabase(adminUrl), bus: 'postgres' as const };
  const server = await startServer({ ...storage, host: '127.0.0.1', port: 0, logLevel: 'silent', statusFlushInterval: 0.05 });
  const base = server.url ?? '';
  const streams = new AbortController();
  let agent: TestAgent | undefined;
  try {
    const admin = server.adminToken.token ?? '';
    const fleet = await Fleet.create(base, admin);
    const device = await fleet.enroll();
    agent = startAgent(tunnelUrl(base), device.token);
    await eventually('the agent tunnel opens', async () => (await metric(base, 'fleetplane_agent_tunnels_open')) === 1);
    const headers = { [HEADERS.authorization]: `Bearer ${fleet.reader}`, [HEADERS.contentType]: MEDIA.json };
    const watch = await fetch(new URL(paths.events(fleet.org), base), {
      method: 'POST',
      headers,
      body: JSON.stringify([{ kind: 'device' }]),
      signal: streams.signal,
    });
    await watch.body?.getReader().read();
    const convergence = await fetch(new URL(`${paths.convergence(fleet.org)}?${QUERY.watch}=true`, base), { headers, signal: streams.signal });
    await convergence.body?.getReader().read();
    const ack = await http(base, 'PUT', paths.deviceStatus(fleet.org, device.id), device.token, {
      applied_revision: 1,
      apply_error: null,
      local_endpoints: [],
      os: null,
      agent_version: null,
    });
    if (ack.status !== 200) throw new Error(`status PUT: ${ack.status} ${JSON.stringify(ack.body)}`);
  } catch (err) {
    streams.abort();
    await agent?.stop();
    await server.close();
    throw err;
  }
  return {
    server,
    base,
    reliableBus: adminUrl !== '',
    async scrape() {
      const res = await fetch(new URL(ROUTES.metrics, base));
      if (res.status !== 200) throw new Error(`GET /metrics: ${res.status}`);
      return res.text();
    },
    async close() {
      streams.abort();
      await agent?.stop();
      await server.close();
    },
  };
}
