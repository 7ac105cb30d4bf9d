/**
 * The status reporter with a real tunnel client, against the fake tunnel
 * server: statuses go as acked frames (no PUT), go again on every
 * reconnection, and go by PUT when the server ignores frames (an older server).
 */
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FleetplaneClient, type FetchLike } from '../../src/client/index.js';
import { StatusReporter } from '../../src/agent/index.js';
import type { DeviceStatusInput } from '../../src/protocol/index.js';
import { ackStatus, FakeTunnelServer } from '../gateway/fake-tunnel-server.js';
import { eventually, startAgent, type TestAgent } from '../gateway/support.js';

const ORG = '00000000-0000-4000-8000-0000000000aa';
const DEV = '00000000-0000-4000-8000-000000000001';

describe('status reports over a real tunnel client', () => {
  let server: FakeTunnelServer;
  let agent: TestAgent | undefined;
  const stops: AbortController[] = [];
  const puts: DeviceStatusInput[] = [];
  const fetch: FetchLike = async (_url, init) => {
    puts.push(JSON.parse(String(init.body)) as DeviceStatusInput);
    return new Response(JSON.stringify({ ...puts.at(-1), last_seen: new Date().toISOString() }), { status: 200, headers: { 'content-type': 'application/json' } });
  };

  beforeEach(async () => {
    puts.length = 0;
    server = await FakeTunnelServer.start();
  });

  afterEach(async () => {
    for (const s of stops.splice(0)) s.abort();
    await agent?.stop();
    agent = undefined;
    await server.close();
  });

  function reporterOn(tunnel: TestAgent, ackTimeoutMs = 5_000): StatusReporter {
    const reporter = new StatusReporter({
      client: new FleetplaneClient({ baseUrl: 'http://fake', token: 't', fetch }),
      org: ORG,
      deviceId: DEV,
      intervalMs: 60_000,
      initial: { applied_revision: null, apply_error: null, local_endpoints: [], os: 'test-os', agent_version: 'test' },
      logger: pino({ level: 'silent' }),
      minSpacingMs: 0,
      ackTimeoutMs,
    });
    reporter.attachTunnel(tunnel.client);
    const stop = new AbortController();
    stops.push(stop);
    void reporter.run(stop.signal);
    return reporter;
  }

  it('sends acked status frames instead of PUTs, and the current status again on each new connection', async () => {
    server.answerStatus = ackStatus;
    agent = startAgent(server.url, 't');
    const reporter = reporterOn(agent);
    const first = await server.tunnel(0);
    await eventually('the status sent on connection', () => first.statuses().length === 1);
    reporter.update({ applied_revision: 4 });
    await eventually('the change', () => first.statuses().at(-1)?.status.applied_revision === 4);
    first.ws.close(1012, 'restart');
    const second = await server.tunnel(1);
    await eventually('the status re-sent on reconnection', () => second.statuses().length === 1);
    expect(second.statuses()[0]).toMatchObject({ seq: 1, status: { applied_revision: 4 } });
    await eventually('the ack', () => reporter.stats.sent === 3);
    expect(reporter.stats.sent_via_tunnel).toBe(3);
    expect(puts).toHaveLength(0);
  });

  it('reports by PUT when the server ignores status frames', async () => {
    agent = startAgent(server.url, 't');
    const reporter = reporterOn(agent, 50);
    await eventually('the fallback PUT', () => puts.length === 1);
    reporter.update({ applied_revision: 5 });
    await eventually('the change by PUT', () => puts.at(-1)?.applied_revision === 5);
    expect((await server.tunnel(0)).statuses()).toHaveLength(1);
    expect(reporter.stats).toMatchObject({ sent: 2, sent_via_tunnel: 0, last_channel: 'put' });
  });
});
