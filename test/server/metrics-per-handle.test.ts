import { describe, expect, it } from 'vitest';
import { Metrics } from '../../src/server/metrics.js';

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
