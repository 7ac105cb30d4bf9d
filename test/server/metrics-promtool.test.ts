import { spawnSync } from 'node:child_process';
import { AggregatorRegistry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Metrics } from '../../src/server/metrics.js';
import { hasPromtool, requireBinary } from '../support/binaries.js';
import { startScrapedServer, type ScrapedServer } from './support/scraped-server.js';

const runs = requireBinary('promtool (Debian package prometheus)', hasPromtool());

/** `promtool check metrics` on `text`: its findings, one per line ('' when there are none). */
function promtool(text: string): { status: number | null; findings: string } {
  const res = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8', timeout: 20_000 });
  if (res.error) throw res.error;
  return { status: res.status, findings: `${res.stdout}${res.stderr}`.trim() };
}

/** Metric families in a scrape (from its `# TYPE` lines). */
function families(text: string): Set<string> {
  return new Set([...text.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1] ?? ''));
}

describe('process metrics at fleet scale', () => {
  // A fleet's server holds two sockets per agent: a metric that lists every handle at each
  // scrape costs CPU and garbage in proportion to the fleet.
  it('a scrape lists no handle, request or resource one by one, and still counts open files', async () => {
    const names = families(await new Metrics({ processMetrics: true }).registry.metrics());
    expect([...names].filter((n) => n.startsWith('nodejs_active_'))).toEqual([]);
    expect(names.has('process_open_fds')).toBe(true);
    expect(names.has('nodejs_heap_size_used_bytes')).toBe(true);
  });
});

describe.runIf(runs)('/metrics follows the Prometheus naming conventions (promtool check metrics)', () => {
  let s: ScrapedServer;
  beforeAll(async () => {
    s = await startScrapedServer();
  });
  afterAll(async () => {
    await s?.close();
  });

  it('the scrape holds the families of every metrics file, so the check covers them', async () => {
    const names = families(await s.scrape());
    const expected = [
      'fleetplane_http_requests_total', // metrics.ts
      'fleetplane_up',
      'process_cpu_seconds_total', // default collectors, conventional names
      'process_resident_memory_bytes',
      'nodejs_heap_size_used_bytes',
      'fleetplane_watchers', // watch-metrics.ts
      'fleetplane_watch_fanout_seconds',
      'fleetplane_devices', // fleet-metrics.ts
      'fleetplane_device_ack_latency_seconds',
      'fleetplane_convergence_streams',
      'fleetplane_agent_tunnels_open', // gateway-metrics.ts
      ...(s.reliableBus ? ['fleetplane_bus_messages_sent_total', 'fleetplane_bus_resyncs_total', 'fleetplane_bus_publishers'] : []),
    ];
    expect(expected.filter((n) => !names.has(n))).toEqual([]);
  });

  it('the server’s own scrape has no findings', async () => {
    expect(promtool(await s.scrape())).toEqual({ status: 0, findings: '' });
  });

  it('the scrape the primary aggregates under --workers (cluster-metrics.ts) has no findings', async () => {
    const registry = s.server.ctx.metrics.registry;
    const aggregated = AggregatorRegistry.aggregate([await registry.getMetricsAsJSON(), await registry.getMetricsAsJSON()]);
    expect(promtool(await aggregated.metrics())).toEqual({ status: 0, findings: '' });
  });

  // The check itself: a gauge named like a counter must be reported, or the tests above prove nothing.
  it('promtool reports a non-counter named _total', () => {
    const bad = '# HELP x_total A gauge.\n# TYPE x_total gauge\nx_total 1\n';
    const res = promtool(bad);
    expect(res.status).not.toBe(0);
    expect(res.findings).toMatch(/_total/);
  });
});
