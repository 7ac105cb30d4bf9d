import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROUTES } from '../../src/protocol/index.js';
import { hasPrometheus, requireBinary } from '../support/binaries.js';
import { eventually } from '../gateway/support.js';
import { startPrometheus, type PrometheusServer } from './support/prometheus-server.js';
import { startScrapedServer, type ScrapedServer } from './support/scraped-server.js';

const runs = requireBinary('prometheus (Debian package prometheus)', hasPrometheus());

interface Target {
  health: string;
  lastError: string;
  scrapeUrl: string;
}

/** A Prometheus HTTP API answer's `data`, or undefined while it doesn't answer. */
async function api<T>(base: string, path: string): Promise<T | undefined> {
  try {
    const res = await fetch(new URL(path, base));
    if (res.status !== 200) return undefined;
    return ((await res.json()) as { data: T }).data;
  } catch {
    return undefined;
  }
}

/** The value of an instant query's only sample. */
async function queryValue(base: string, promql: string): Promise<string | undefined> {
  const data = await api<{ result: { value: [number, string] }[] }>(base, `/api/v1/query?query=${encodeURIComponent(promql)}`);
  return data?.result.length === 1 ? data.result[0]?.value[1] : undefined;
}

describe.runIf(runs)('a real Prometheus scrapes /metrics', () => {
  let s: ScrapedServer;
  let prometheus: PrometheusServer;
  beforeAll(async () => {
    s = await startScrapedServer();
    prometheus = await startPrometheus(new URL(s.base).host, ROUTES.metrics);
  });
  afterAll(async () => {
    await prometheus?.stop();
    await s?.close();
  });

  it('the target is up and its samples are stored', async () => {
    let target: Target | undefined;
    await eventually(
      'Prometheus scrapes the server successfully',
      async () => {
        const data = await api<{ activeTargets: Target[] }>(prometheus.url, '/api/v1/targets');
        target = data?.activeTargets[0];
        return target?.health === 'up';
      },
      25_000,
    ).catch((err: unknown) => {
      throw new Error(`${String(err)}; target: ${JSON.stringify(target)}; prometheus log:\n${prometheus.output()}`);
    });
    expect(target).toMatchObject({ health: 'up', lastError: '' });
    // The target's health is reported before the scrape's samples are queryable
    // (CI once saw `up` missing right after health turned up), so the queries wait too.
    for (const promql of ['up{job="fleetplane"}', 'fleetplane_up']) {
      let value: string | undefined;
      await eventually(
        `Prometheus answers ${promql} with 1`,
        async () => {
          value = await queryValue(prometheus.url, promql);
          return value === '1';
        },
        25_000,
      ).catch((err: unknown) => {
        throw new Error(`${String(err)}; last value: ${String(value)}; prometheus log:\n${prometheus.output()}`);
      });
    }
  });
});
