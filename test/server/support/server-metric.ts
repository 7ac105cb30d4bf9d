import type { FleetServer } from '../../../src/server/index.js';

/** Sum of a server metric's values: all label sets, or those matching `labels`. Throws when it isn't registered. */
export async function metricSum(server: FleetServer, name: string, labels: Record<string, string> = {}): Promise<number> {
  const m = server.ctx.metrics.registry.getSingleMetric(name);
  if (!m) throw new Error(`metric ${name} is not registered`);
  let sum = 0;
  for (const v of (await m.get()).values) {
    const l = v.labels as Record<string, string | number | undefined>;
    if (Object.entries(labels).every(([k, want]) => String(l[k]) === want)) sum += v.value;
  }
  return sum;
}
